/* placeholder: being written */
typedef int neff_builder_placeholder_t;
