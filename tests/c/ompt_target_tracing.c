// RELEASES: 19 22
// LLVM 14's libomptarget has no OMPT support.
// An OMPT tool in the program (ompt_start_tool) registers the device
// tracing callbacks (target, target_data_op, target_submit,
// device_initialize/load/finalize) and prints each, with names instead of
// addresses: what LLVM 19's and 22's runtimes report, in their order.
#include "lib/ompt_tool.h"
#include "lib/ompt_trace_body.h"
