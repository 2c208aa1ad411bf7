#include "device/cuda/cubin_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

namespace gpuprof::device::cuda {
namespace {

// First word of a CUDA fat binary (fatBinaryHeader.magic): a container of cubins and PTX for
// several architectures. Callers must hand over one cubin from it.
constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
// The user constant bank. Banks 0 (parameters) and 2 (literals) are per kernel and bank 4 holds the
// __device__ variables' addresses; none of them holds a __constant__ variable (README.md).
constexpr std::string_view kUserConstantSection = ".nv.constant3";
constexpr std::string_view kGlobalSectionPrefix = ".nv.global";
// nvcc types the variables of a relocatable (-rdc) object with this processor-specific value;
// nvlink turns them into STT_OBJECT in the linked module.
constexpr unsigned char kCudaObjectType = STT_LOPROC;

std::string Hex(std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[value & 0xf]);
    value >>= 4;
  } while (value != 0);
  return "0x" + out;
}

// offset + length <= size, without overflow.
bool InBounds(std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  return offset <= size && length <= size - offset;
}

// Copies a T out of `bytes` at `offset` (the caller has checked the bounds): the image carries no
// alignment guarantee, so ELF structures are never accessed in place.
template <typename T>
T Load(std::span<const std::byte> bytes, std::uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

Status Invalid(std::string message) { return InvalidArgumentError("cubin: " + std::move(message)); }

// The NUL-terminated string at `offset` of a string table section.
StatusOr<std::string_view> StringAt(std::span<const std::byte> table, std::uint64_t offset,
                                    std::string_view what) {
  if (offset >= table.size()) {
    return Invalid(std::string(what) + " offset " + std::to_string(offset) +
                   " out of range (string table of " + std::to_string(table.size()) + " bytes)");
  }
  const void* end = std::memchr(table.data() + offset, 0, table.size() - offset);
  if (end == nullptr) {
    return Invalid(std::string(what) + " at offset " + std::to_string(offset) +
                   " runs past the end of its string table (no terminating NUL)");
  }
  const auto* begin = reinterpret_cast<const char*>(table.data() + offset);
  return std::string_view(begin, static_cast<std::size_t>(static_cast<const char*>(end) - begin));
}

// An ELF64 little-endian CUDA image whose header and section header table lie inside it. Section
// contents are checked when they are read.
class ElfImage {
 public:
  static StatusOr<ElfImage> Parse(std::span<const std::byte> image);

  std::size_t section_count() const noexcept { return sections_.size(); }
  const Elf64_Shdr& section(std::size_t index) const noexcept { return sections_[index]; }

  // The bytes of section `index` (empty for NOBITS); InvalidArgument when they lie outside the image.
  StatusOr<std::span<const std::byte>> SectionData(std::size_t index, std::string_view what) const;
  StatusOr<std::string_view> SectionName(std::size_t index) const;

 private:
  ElfImage(std::span<const std::byte> image, std::vector<Elf64_Shdr> sections, std::size_t shstrndx)
      : image_(image), sections_(std::move(sections)), shstrndx_(shstrndx) {}

  std::span<const std::byte> image_;
  std::vector<Elf64_Shdr> sections_;
  std::size_t shstrndx_;
};

StatusOr<ElfImage> ElfImage::Parse(std::span<const std::byte> image) {
  if (image.empty()) return Invalid("the image is empty");
  if (image.size() >= sizeof(std::uint32_t) && Load<std::uint32_t>(image, 0) == kFatbinMagic) {
    return Invalid(
        "the image is a CUDA fat binary (magic 0xba55ed50), not a cubin; extract the cubin for one "
        "architecture first");
  }
  if (image.size() < SELFMAG || std::memcmp(image.data(), ELFMAG, SELFMAG) != 0) {
    return Invalid("not an ELF image (no \\x7fELF magic in the first " + std::to_string(SELFMAG) + " bytes)");
  }
  if (image.size() < EI_NIDENT)
    return Invalid("truncated ELF header (" + std::to_string(image.size()) + " bytes)");
  const auto elf_class = static_cast<unsigned>(image[EI_CLASS]);
  if (elf_class != ELFCLASS64) {
    return Invalid("not a 64-bit ELF (EI_CLASS " + std::to_string(elf_class) + "; cubins are ELFCLASS64)");
  }
  const auto elf_data = static_cast<unsigned>(image[EI_DATA]);
  if (elf_data != ELFDATA2LSB) {
    return Invalid("not a little-endian ELF (EI_DATA " + std::to_string(elf_data) +
                   "; cubins are ELFDATA2LSB)");
  }
  if (image.size() < sizeof(Elf64_Ehdr)) {
    return Invalid("truncated ELF header (" + std::to_string(image.size()) + " bytes, the header needs " +
                   std::to_string(sizeof(Elf64_Ehdr)) + ")");
  }
  const auto header = Load<Elf64_Ehdr>(image, 0);
  if (header.e_machine != EM_CUDA) {
    return Invalid("not a CUDA cubin (e_machine " + std::to_string(header.e_machine) + ", expected EM_CUDA " +
                   std::to_string(EM_CUDA) + ")");
  }
  if (header.e_shoff == 0 || header.e_shnum == 0) {
    // e_shnum 0 with a table present is extended numbering (>= 0xff00 sections): not a cubin.
    return Invalid("no section header table (e_shoff " + Hex(header.e_shoff) + ", e_shnum " +
                   std::to_string(header.e_shnum) + ")");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) {
    return Invalid("section header size " + std::to_string(header.e_shentsize) + ", expected " +
                   std::to_string(sizeof(Elf64_Shdr)));
  }
  const std::uint64_t table_bytes = std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (!InBounds(header.e_shoff, table_bytes, image.size())) {
    return Invalid("truncated section header table (" + std::to_string(header.e_shnum) + " headers at " +
                   Hex(header.e_shoff) + " need " + std::to_string(table_bytes) + " bytes; the image has " +
                   std::to_string(image.size()) + ")");
  }
  if (header.e_shstrndx == SHN_UNDEF || header.e_shstrndx >= header.e_shnum) {
    return Invalid("section name string table index " + std::to_string(header.e_shstrndx) +
                   " out of range (" + std::to_string(header.e_shnum) + " sections)");
  }
  std::vector<Elf64_Shdr> sections;
  sections.reserve(header.e_shnum);
  for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
    sections.push_back(Load<Elf64_Shdr>(image, header.e_shoff + i * sizeof(Elf64_Shdr)));
  }
  return ElfImage(image, std::move(sections), header.e_shstrndx);
}

StatusOr<std::span<const std::byte>> ElfImage::SectionData(std::size_t index, std::string_view what) const {
  const Elf64_Shdr& header = sections_[index];
  if (header.sh_type == SHT_NOBITS) return std::span<const std::byte>();
  if (!InBounds(header.sh_offset, header.sh_size, image_.size())) {
    return Invalid("truncated " + std::string(what) + ": section " + std::to_string(index) + " spans " +
                   std::to_string(header.sh_size) + " bytes at " + Hex(header.sh_offset) +
                   " but the image has " + std::to_string(image_.size()));
  }
  return image_.subspan(header.sh_offset, header.sh_size);
}

StatusOr<std::string_view> ElfImage::SectionName(std::size_t index) const {
  GPUPROF_ASSIGN_OR_RETURN(const std::span<const std::byte> names,
                           SectionData(shstrndx_, "section name string table"));
  return StringAt(names, sections_[index].sh_name, "section " + std::to_string(index) + " name");
}

// Calls visit(symbol, name) for every symbol but the null one of every SHT_SYMTAB section, after
// checking the table, its string table, the name and, for a defined symbol, its section index.
// Stops at the first error, the visitor's included.
template <typename Visit>
Status ForEachSymbol(const ElfImage& elf, Visit&& visit) {
  for (std::size_t table = 0; table < elf.section_count(); ++table) {
    const Elf64_Shdr& symtab = elf.section(table);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    if (symtab.sh_entsize != sizeof(Elf64_Sym)) {
      return Invalid("symbol table (section " + std::to_string(table) + ") has entries of " +
                     std::to_string(symtab.sh_entsize) + " bytes, expected " +
                     std::to_string(sizeof(Elf64_Sym)));
    }
    GPUPROF_ASSIGN_OR_RETURN(const std::span<const std::byte> symbols,
                             elf.SectionData(table, "symbol table"));
    if (symbols.size() % sizeof(Elf64_Sym) != 0) {
      return Invalid("truncated symbol table: section " + std::to_string(table) + " holds " +
                     std::to_string(symbols.size()) + " bytes, not a whole number of " +
                     std::to_string(sizeof(Elf64_Sym)) + "-byte symbols");
    }
    if (symtab.sh_link == SHN_UNDEF || symtab.sh_link >= elf.section_count()) {
      return Invalid("string table index " + std::to_string(symtab.sh_link) +
                     " of the symbol table (section " + std::to_string(table) + ") out of range (" +
                     std::to_string(elf.section_count()) + " sections)");
    }
    if (elf.section(symtab.sh_link).sh_type != SHT_STRTAB) {
      return Invalid("string table index " + std::to_string(symtab.sh_link) +
                     " of the symbol table (section " + std::to_string(table) +
                     ") names a section that is not a string table");
    }
    GPUPROF_ASSIGN_OR_RETURN(const std::span<const std::byte> strings,
                             elf.SectionData(symtab.sh_link, "symbol string table"));
    const std::size_t count = symbols.size() / sizeof(Elf64_Sym);
    for (std::size_t i = 1; i < count; ++i) {
      const auto symbol = Load<Elf64_Sym>(symbols, i * sizeof(Elf64_Sym));
      GPUPROF_ASSIGN_OR_RETURN(const std::string_view name,
                               StringAt(strings, symbol.st_name, "symbol " + std::to_string(i) + " name"));
      if (symbol.st_shndx == SHN_XINDEX) {
        return Invalid("symbol '" + std::string(name) +
                       "' uses an extended section index (SHN_XINDEX), which "
                       "cubins do not");
      }
      if (symbol.st_shndx != SHN_UNDEF && symbol.st_shndx < SHN_LORESERVE &&
          symbol.st_shndx >= elf.section_count()) {
        return Invalid("symbol '" + std::string(name) + "' has section index " +
                       std::to_string(symbol.st_shndx) + " out of range (" +
                       std::to_string(elf.section_count()) + " sections)");
      }
      GPUPROF_RETURN_IF_ERROR(visit(symbol, name));
    }
  }
  return OkStatus();
}

// Defined in a real section: not undefined, not absolute or common.
bool InSection(const Elf64_Sym& symbol) {
  return symbol.st_shndx != SHN_UNDEF && symbol.st_shndx < SHN_LORESERVE;
}

}  // namespace

StatusOr<std::vector<CubinVariable>> ReadCubinVariables(std::span<const std::byte> image) {
  GPUPROF_ASSIGN_OR_RETURN(const ElfImage elf, ElfImage::Parse(image));
  std::vector<CubinVariable> variables;
  GPUPROF_RETURN_IF_ERROR(ForEachSymbol(elf, [&](const Elf64_Sym& symbol, std::string_view name) -> Status {
    const unsigned char type = ELF64_ST_TYPE(symbol.st_info);
    if (type != STT_OBJECT && type != kCudaObjectType) return OkStatus();
    // '$'-names are the compiler's (printf's "$str" literals), never a cuModuleGetGlobal name.
    if (!InSection(symbol) || name.empty() || name.front() == '$') return OkStatus();
    GPUPROF_ASSIGN_OR_RETURN(const std::string_view section, elf.SectionName(symbol.st_shndx));
    bool is_constant = false;
    if (section == kUserConstantSection) {
      is_constant = true;
    } else if (!section.starts_with(kGlobalSectionPrefix)) {
      return OkStatus();
    }
    variables.push_back(CubinVariable{std::string(name), symbol.st_size, is_constant});
    return OkStatus();
  }));
  // Largest first within a name, so that unique keeps the size that covers every definition.
  std::sort(variables.begin(), variables.end(), [](const CubinVariable& a, const CubinVariable& b) {
    return a.name != b.name ? a.name < b.name : a.size > b.size;
  });
  variables.erase(
      std::unique(variables.begin(), variables.end(),
                  [](const CubinVariable& a, const CubinVariable& b) { return a.name == b.name; }),
      variables.end());
  return variables;
}

StatusOr<CubinSideEffects> ReadCubinSideEffects(std::span<const std::byte> image) {
  GPUPROF_ASSIGN_OR_RETURN(const ElfImage elf, ElfImage::Parse(image));
  CubinSideEffects effects;
  GPUPROF_RETURN_IF_ERROR(ForEachSymbol(elf, [&](const Elf64_Sym& symbol, std::string_view name) -> Status {
    if (symbol.st_shndx != SHN_UNDEF) return OkStatus();
    if (name == "vprintf") effects.uses_printf = true;
    if (name == "malloc" || name == "free") effects.uses_device_malloc = true;
    return OkStatus();
  }));
  return effects;
}

StatusOr<std::vector<std::string>> ReadCubinKernelNames(std::span<const std::byte> image) {
  GPUPROF_ASSIGN_OR_RETURN(const ElfImage elf, ElfImage::Parse(image));
  std::vector<std::string> kernels;
  GPUPROF_RETURN_IF_ERROR(ForEachSymbol(elf, [&](const Elf64_Sym& symbol, std::string_view name) -> Status {
    if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC || !InSection(symbol) || name.empty()) return OkStatus();
    // Kernels live in ".text.<name>"; device functions of a relocatable cubin may too, which is
    // harmless: the names are only matched against launched functions.
    GPUPROF_ASSIGN_OR_RETURN(const std::string_view section, elf.SectionName(symbol.st_shndx));
    if (section.starts_with(".text.")) kernels.emplace_back(name);
    return OkStatus();
  }));
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  return kernels;
}

}  // namespace gpuprof::device::cuda
