/* placeholder: being written */
typedef int neff_reader_placeholder_t;
