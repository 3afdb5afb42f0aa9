/* placeholder: being written */
typedef int isa_placeholder_t;
