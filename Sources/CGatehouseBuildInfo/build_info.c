#include "gatehouse_build_info.h"

#ifndef GATEHOUSE_REVISION
#define GATEHOUSE_REVISION "unknown"
#endif

const char *gatehouse_build_revision(void) { return GATEHOUSE_REVISION; }
