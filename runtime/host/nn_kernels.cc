#include "runtime/host/nn_kernels.h"
