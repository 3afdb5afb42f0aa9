/* placeholder: being written */
typedef int npy_placeholder_t;
