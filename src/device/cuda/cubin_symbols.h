// What a CUDA cubin (the ELF64 image of one loaded module) says about itself: its module-scope
// variables, for the snapshot of rule R7, and whether it calls device printf or device malloc/free,
// for rule C2.
//
// A small ELF reader with no CUDA dependency: it runs on the bytes CUPTI's MODULE_LOADED resource
// callback hands over (or a .cubin file's bytes). It copies every ELF structure out with memcpy, so
// the image needs no alignment, and checks every offset before reading, so any byte sequence gives
// either a result or InvalidArgument, never an out-of-bounds read.
//
// Sections (verified with nvcc 13.0 for sm_80, sm_90, sm_100 and sm_120; README.md):
//   .nv.global       __device__ variables without an initializer, and __managed__ ones (NOBITS)
//   .nv.global.init  __device__ variables with an initializer
//   .nv.constant3    __constant__ variables (the user constant bank)
// Not variables: .nv.constant0.<kernel> (parameters), .nv.constant2.<kernel> (the compiler's literal
// pool), .nv.constant4 (the __device__ variables' addresses, relocated at load), and the compiler's
// objects whose names start with '$' (printf format strings, "$str", in .nv.global.init).
//
// Thread-safety: both functions are pure; the image is only read and not retained.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpuprof/status.h"

namespace gpuprof::device::cuda {

// A module-scope variable as the cubin's symbol table defines it (no address: that is the loaded
// module's, cuModuleGetGlobal).
struct CubinVariable {
  std::string name;          // the symbol name, mangled for C++ (e.g. _ZN2ns3varE)
  std::uint64_t size = 0;    // st_size in bytes, as the symbol table says (0 is reported as is)
  bool is_constant = false;  // __constant__ (.nv.constant3) rather than __device__ (.nv.global*)

  friend bool operator==(const CubinVariable&, const CubinVariable&) = default;
};

// The __device__ and __constant__ variables `image` defines, sorted by name, one entry per name
// (the largest size when a name is defined twice). Object symbols of both a linked module
// (STT_OBJECT) and a relocatable -rdc object (the CUDA object type STT_LOPROC) count. __managed__
// variables are listed like __device__ ones: their addresses are managed memory, which rule R6
// excludes, so whoever snapshots classifies each address first.
// InvalidArgument, naming the problem, when `image` is empty, a fat binary rather than a cubin, not
// an ELF64 little-endian CUDA image, or when a header, table or string index lies outside it.
StatusOr<std::vector<CubinVariable>> ReadCubinVariables(std::span<const std::byte> image);

// Device-side calls whose effects replay would repeat (rule C2), seen as undefined symbols the
// driver resolves at load: vprintf (printf) and malloc/free (also what device new/delete call).
struct CubinSideEffects {
  bool uses_printf = false;
  bool uses_device_malloc = false;
};

// Errors as for ReadCubinVariables.
// Per module, not per kernel: on sm_90 a kernel calls vprintf through the module's address table
// (.nv.constant4, relocated to vprintf), so the symbol table cannot say which kernel prints.
StatusOr<CubinSideEffects> ReadCubinSideEffects(std::span<const std::byte> image);

// The (mangled) names of the functions the cubin defines in ".text.<name>" sections: its kernels,
// which tie a loaded cubin to the functions launched from it (the replay hook's R7 lookup).
// Sorted, deduplicated. Errors as for ReadCubinVariables.
StatusOr<std::vector<std::string>> ReadCubinKernelNames(std::span<const std::byte> image);

}  // namespace gpuprof::device::cuda
