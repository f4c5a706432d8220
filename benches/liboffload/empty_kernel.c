// The empty kernel of ol_vs_openmp.c: an x86_64 shared object that
// olCreateProgram loads on a host device.
void empty(void) {}
