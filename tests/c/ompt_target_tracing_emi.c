// RELEASES: 19 22
// LLVM 14's libomptarget has no OMPT support.
// As ompt_target_tracing.c with the EMI callbacks (target_emi,
// target_data_op_emi, target_submit_emi): both endpoints of each
// operation, the tool's own ids through the runtime's per-thread data.
#define OMPT_TOOL_EMI
#include "lib/ompt_tool.h"
#include "lib/ompt_trace_body.h"
