// CXX
// RELEASES: 14
// (LLVM 19 and 22 made the handle an llvm::SmallVector: this program crashes
// on their own runtimes, so only clang 14's build is compared.)
// LLVM's mapper API as its own test uses it: a C++ program owns the handle,
// a MapperComponentsTy holding a std::vector of LLVM's 40-byte component
// struct, pushes components through __tgt_push_mapper_component (the
// runtime grows the vector), grows it further itself, and destroys it with
// C++ (valgrind: no mismatched free, no leak).
#include <cstdint>
#include <cstdio>
#include <vector>

extern "C" {
void __tgt_push_mapper_component(void *handle, void *base, void *begin,
                                 int64_t size, int64_t type, void *name);
int64_t __tgt_mapper_num_components(void *handle);
}

struct MapComponentInfoTy {
  void *Base;
  void *Begin;
  int64_t Size;
  int64_t Type;
  void *Name;
  MapComponentInfoTy() = default;
  MapComponentInfoTy(void *Base, void *Begin, int64_t Size, int64_t Type,
                     void *Name)
      : Base(Base), Begin(Begin), Size(Size), Type(Type), Name(Name) {}
};

struct MapperComponentsTy {
  std::vector<MapComponentInfoTy> Components;
};

int main() {
  static_assert(sizeof(MapComponentInfoTy) == 40, "LLVM's layout");
  int data[16];
  bool ok = true;
  // LLVM 19/22 set up their runtime at the first registration; a program
  // with an offload region has one.
  int ran = 0;
#pragma omp target map(tofrom : ran)
  ran = 1;
  std::printf("region ran=%d\n", ran);
  {
    MapperComponentsTy MC;
    for (int i = 0; i < 5; i++)
      __tgt_push_mapper_component(&MC, data, data + i, 4 * (i + 1), 3 + i,
                                  nullptr);
    std::printf("runtime pushed: num=%ld size=%zu\n",
                (long)__tgt_mapper_num_components(&MC), MC.Components.size());
    for (int i = 0; i < 5; i++)
      ok = ok && MC.Components[i].Begin == data + i &&
           MC.Components[i].Size == 4 * (i + 1) && MC.Components[i].Type == 3 + i;
    for (int i = 0; i < 7; i++)
      MC.Components.emplace_back(data, data + 8, 1, 0x20, nullptr);
    __tgt_push_mapper_component(&MC, data, data + 15, 99, 1, nullptr);
    std::printf("after C++ and runtime pushes: num=%ld last size=%ld\n",
                (long)__tgt_mapper_num_components(&MC),
                (long)MC.Components.back().Size);
    ok = ok && MC.Components.size() == 13 && MC.Components[12].Begin == data + 15;
  }
  MapperComponentsTy empty;
  std::printf("empty handle: num=%ld\n", (long)__tgt_mapper_num_components(&empty));
  std::printf("elements intact=%d\n", ok);
  return ok ? 0 : 1;
}
