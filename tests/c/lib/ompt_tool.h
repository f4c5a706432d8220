// A small OMPT tool for the differential suite: it registers the device
// tracing callbacks (the EMI forms when OMPT_TOOL_EMI is defined) and
// prints each call. Nothing printed depends on the runtime's addresses or
// id values: host addresses are named after the program's variables
// (tool_name), device addresses after the host data they were first seen
// with, return addresses by order of first appearance, and the runtime's
// ids relative to the first one it gave.
#include <omp-tools.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { TOOL_MAX = 64 };

struct tool_range {
  const char *name;
  uintptr_t begin, end;
};
static struct tool_range tool_host[TOOL_MAX];
static int tool_nhost;

struct tool_dev {
  uintptr_t addr;
  char name[40];
};
static struct tool_dev tool_devs[TOOL_MAX];
static int tool_ndevs, tool_nanon;

static uintptr_t tool_codes[TOOL_MAX];
static int tool_ncodes;
static ompt_id_t tool_first_id;
// The initial device's number (set by the program: not asked from inside
// a callback).
static int tool_initial_device = -1;
static ompt_id_t tool_next_emi_id = 1;

// Name the host range [p, p+n) for the trace.
static void tool_name(const void *p, size_t n, const char *name) {
  if (tool_nhost < TOOL_MAX)
    tool_host[tool_nhost++] =
        (struct tool_range){name, (uintptr_t)p, (uintptr_t)p + n};
}

static const char *tool_host_name(const void *p, char *buf) {
  uintptr_t a = (uintptr_t)p;
  if (!p)
    return "null";
  for (int i = 0; i < tool_nhost; i++)
    if (a >= tool_host[i].begin && a < tool_host[i].end) {
      if (a == tool_host[i].begin)
        return tool_host[i].name;
      snprintf(buf, 40, "%s+%lu", tool_host[i].name,
               (unsigned long)(a - tool_host[i].begin));
      return buf;
    }
  return "host?";
}

static struct tool_dev *tool_dev_find(const void *p) {
  for (int i = 0; i < tool_ndevs; i++)
    if (tool_devs[i].addr == (uintptr_t)p)
      return &tool_devs[i];
  return NULL;
}

// Name a device address after the host side `host` of the operation that
// shows it first (or a running number when there is none).
static const char *tool_dev_name(const void *p, const void *host) {
  if (!p)
    return "null";
  struct tool_dev *d = tool_dev_find(p);
  if (!d && tool_ndevs < TOOL_MAX) {
    d = &tool_devs[tool_ndevs++];
    d->addr = (uintptr_t)p;
    char buf[40];
    if (host)
      snprintf(d->name, sizeof d->name, "dev(%s)", tool_host_name(host, buf));
    else
      snprintf(d->name, sizeof d->name, "dev#%d", ++tool_nanon);
  }
  return d ? d->name : "dev?";
}

static void tool_dev_forget(const void *p) {
  struct tool_dev *d = tool_dev_find(p);
  if (d)
    *d = tool_devs[--tool_ndevs];
}

static int tool_code(const void *code) {
  if (!code)
    return 0;
  for (int i = 0; i < tool_ncodes; i++)
    if (tool_codes[i] == (uintptr_t)code)
      return i + 1;
  if (tool_ncodes < TOOL_MAX)
    tool_codes[tool_ncodes++] = (uintptr_t)code;
  return tool_ncodes;
}

static long tool_id(ompt_id_t id) {
  if (!id)
    return 0;
  if (!tool_first_id)
    tool_first_id = id;
  return (long)(id - tool_first_id) + 1;
}

static const char *tool_op_name(ompt_target_data_op_t op) {
  switch (op) {
  case ompt_target_data_alloc: return "alloc";
  case ompt_target_data_transfer_to_device: return "to";
  case ompt_target_data_transfer_from_device: return "from";
  case ompt_target_data_delete: return "delete";
  case ompt_target_data_associate: return "associate";
  case ompt_target_data_disassociate: return "disassociate";
  default: return "other";
  }
}

// Names of an operation's two addresses: the host side names the device
// side; a deletion forgets its block.
static void tool_op_names(ompt_target_data_op_t op, void *src, int src_dev,
                          void *dst, int dst_dev, const char **s,
                          const char **d, char *sb, char *db) {
  int host = tool_initial_device;
  if (op == ompt_target_data_alloc || op == ompt_target_data_associate ||
      op == ompt_target_data_disassociate ||
      op == ompt_target_data_transfer_to_device) {
    *s = tool_host_name(src, sb);
    *d = tool_dev_name(dst, src);
  } else if (op == ompt_target_data_transfer_from_device && dst_dev == host) {
    *s = tool_dev_name(src, dst);
    *d = tool_host_name(dst, db);
  } else {
    *s = tool_dev_name(src, NULL);
    *d = dst ? tool_dev_name(dst, NULL) : "null";
  }
  (void)src_dev;
}

static void on_device_initialize(int device_num, const char *type,
                                 ompt_device_t *device,
                                 ompt_function_lookup_t lookup,
                                 const char *documentation) {
  printf("device_initialize device=%d type=%s handle=%s lookup=%s doc=%s\n",
         device_num, type ? type : "null", device ? "set" : "null",
         lookup ? "set" : "null", documentation ? "set" : "null");
}

static void on_device_finalize(int device_num) {
  printf("device_finalize device=%d\n", device_num);
}

static void on_device_load(int device_num, const char *filename,
                           int64_t offset_in_file, void *vma_in_file,
                           size_t bytes, void *host_addr, void *device_addr,
                           uint64_t module_id) {
  printf("device_load device=%d file=%s offset=%ld vma=%s bytes=%zu host=%s "
         "device_addr=%s module=%lu\n",
         device_num, filename ? filename : "null", (long)offset_in_file,
         vma_in_file ? "set" : "null", bytes, host_addr ? "set" : "null",
         device_addr ? "set" : "null", (unsigned long)module_id);
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint,
                      int device_num, ompt_data_t *task_data,
                      ompt_id_t target_id, const void *codeptr_ra) {
  printf("target kind=%d endpoint=%d device=%d task_data=%s id=%ld code=c%d\n",
         kind, endpoint, device_num, task_data ? "set" : "null",
         tool_id(target_id), tool_code(codeptr_ra));
}

static void on_target_data_op(ompt_id_t target_id, ompt_id_t host_op_id,
                              ompt_target_data_op_t optype, void *src,
                              int src_device, void *dst, int dst_device,
                              size_t bytes, const void *codeptr_ra) {
  char sb[40], db[40];
  const char *s, *d;
  tool_op_names(optype, src, src_device, dst, dst_device, &s, &d, sb, db);
  printf("  data_op target=%ld op=%ld %s %s@%d -> %s@%d bytes=%zu code=c%d\n",
         tool_id(target_id), tool_id(host_op_id), tool_op_name(optype), s,
         src_device, d, dst_device, bytes, tool_code(codeptr_ra));
  if (optype == ompt_target_data_delete)
    tool_dev_forget(src);
}

static void on_target_submit(ompt_id_t target_id, ompt_id_t host_op_id,
                             unsigned int requested_num_teams) {
  printf("  submit target=%ld op=%ld teams=%u\n", tool_id(target_id),
         tool_id(host_op_id), requested_num_teams);
}

static void on_target_emi(ompt_target_t kind, ompt_scope_endpoint_t endpoint,
                          int device_num, ompt_data_t *task_data,
                          ompt_data_t *target_task_data,
                          ompt_data_t *target_data, const void *codeptr_ra) {
  if (endpoint == ompt_scope_begin)
    target_data->value = tool_next_emi_id++;
  printf("target_emi kind=%d endpoint=%d device=%d task_data=%s "
         "target_task_data=%s target=%lu code=c%d\n",
         kind, endpoint, device_num, task_data ? "set" : "null",
         target_task_data ? "set" : "null",
         (unsigned long)target_data->value, tool_code(codeptr_ra));
}

static void on_target_data_op_emi(
    ompt_scope_endpoint_t endpoint, ompt_data_t *target_task_data,
    ompt_data_t *target_data, ompt_id_t *host_op_id,
    ompt_target_data_op_t optype, void *src, int src_device, void *dst,
    int dst_device, size_t bytes, const void *codeptr_ra) {
  char sb[40], db[40];
  const char *s, *d;
  if (endpoint == ompt_scope_begin)
    *host_op_id = tool_next_emi_id++;
  tool_op_names(optype, src, src_device, dst, dst_device, &s, &d, sb, db);
  printf("  data_op_emi endpoint=%d target_task_data=%s target=%lu op=%lu %s "
         "%s@%d -> %s@%d bytes=%zu code=c%d\n",
         endpoint, target_task_data ? "set" : "null",
         (unsigned long)target_data->value, (unsigned long)*host_op_id,
         tool_op_name(optype), s, src_device, d, dst_device, bytes,
         tool_code(codeptr_ra));
  if (optype == ompt_target_data_delete && endpoint == ompt_scope_end)
    tool_dev_forget(src);
}

static void on_target_submit_emi(ompt_scope_endpoint_t endpoint,
                                 ompt_data_t *target_data,
                                 ompt_id_t *host_op_id,
                                 unsigned int requested_num_teams) {
  if (endpoint == ompt_scope_begin)
    *host_op_id = tool_next_emi_id++;
  printf("  submit_emi endpoint=%d target=%lu op=%lu teams=%u\n", endpoint,
         (unsigned long)target_data->value, (unsigned long)*host_op_id,
         requested_num_teams);
}

static int tool_initialize(ompt_function_lookup_t lookup,
                           int initial_device_num, ompt_data_t *tool_data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  printf("tool initialize: initial device %d\n", initial_device_num);
#define TOOL_SET(event, fn)                                                    \
  if (set(event, (ompt_callback_t)fn) == ompt_set_never)                      \
    printf("cannot register " #event "\n");
  TOOL_SET(ompt_callback_device_initialize, on_device_initialize);
  TOOL_SET(ompt_callback_device_finalize, on_device_finalize);
  TOOL_SET(ompt_callback_device_load, on_device_load);
#ifdef OMPT_TOOL_EMI
  TOOL_SET(ompt_callback_target_emi, on_target_emi);
  TOOL_SET(ompt_callback_target_data_op_emi, on_target_data_op_emi);
  TOOL_SET(ompt_callback_target_submit_emi, on_target_submit_emi);
#else
  TOOL_SET(ompt_callback_target, on_target);
  TOOL_SET(ompt_callback_target_data_op, on_target_data_op);
  TOOL_SET(ompt_callback_target_submit, on_target_submit);
#endif
#undef TOOL_SET
  return 1;
}

static void tool_finalize(ompt_data_t *tool_data) {
  printf("tool finalize\n");
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                          const char *runtime_version) {
  static ompt_start_tool_result_t result = {tool_initialize, tool_finalize,
                                            {0}};
  return &result;
}
