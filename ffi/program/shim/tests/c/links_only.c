/* Links libomptarget.so but calls nothing of it: loading the library must
 * not create the runtime (no plugin loaded, nothing printed). */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void *runtime = dlopen("libomptarget.so", RTLD_NOW | RTLD_NOLOAD);
  printf("runtime_library_loaded=%s\n", runtime ? "yes" : "no");
  if (runtime)
    dlclose(runtime);
  return 0;
}
