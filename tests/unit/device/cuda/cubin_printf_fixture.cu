// Built into an sm_90 cubin for cubin_symbols_test: device printf, which the cubin shows as an
// undefined vprintf (rule C2), and no module variables (the format string is the compiler's "$str").
#include <cstdio>

__global__ void say(int value) { printf("value %d\n", value); }
