#ifndef HOST_HELPERS_H
#define HOST_HELPERS_H
void helpers_fill(int *v, int n, int start);
unsigned long helpers_checksum(const int *v, int n);
#endif
