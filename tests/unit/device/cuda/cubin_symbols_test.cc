#include "device/cuda/cubin_symbols.h"

#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gpuprof::device::cuda {

// For gtest's messages (found by argument-dependent lookup, so outside the anonymous namespace).
void PrintTo(const CubinVariable& variable, std::ostream* os) {
  *os << "{" << variable.name << ", " << variable.size << ", "
      << (variable.is_constant ? "constant" : "global") << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr unsigned char kCudaObjectType = STT_LOPROC;  // nvcc's type for variables of -rdc objects

// Builds a cubin-shaped ELF64 image: sections 0 (null), 1 .shstrtab, 2 .strtab, 3 .symtab, then the
// added ones (zero-filled unless NOBITS), then the section header table.
class CubinBuilder {
 public:
  // Returns the new section's index.
  std::uint16_t AddSection(std::string name, std::uint32_t type, std::uint64_t size) {
    sections_.push_back({std::move(name), type, size});
    return static_cast<std::uint16_t>(kFirstAddedSection + sections_.size() - 1);
  }
  // `name_offset` replaces the real st_name (to point it anywhere).
  void AddSymbol(std::string name, unsigned char type, unsigned char bind, std::uint16_t section,
                 std::uint64_t size, std::optional<std::uint32_t> name_offset = std::nullopt) {
    symbols_.push_back(
        {std::move(name), static_cast<unsigned char>(ELF64_ST_INFO(bind, type)), section, size, name_offset});
  }

  std::vector<std::byte> Build() const {
    std::vector<SectionSpec> all = {{"", SHT_NULL, 0},
                                    {".shstrtab", SHT_STRTAB, 0},
                                    {".strtab", SHT_STRTAB, 0},
                                    {".symtab", SHT_SYMTAB, 0}};
    all.insert(all.end(), sections_.begin(), sections_.end());

    std::string shstrtab(1, '\0');
    std::vector<Elf64_Shdr> headers(all.size(), Elf64_Shdr{});
    for (std::size_t i = 1; i < all.size(); ++i) headers[i].sh_name = AppendString(shstrtab, all[i].name);

    std::string strtab(1, '\0');
    std::vector<Elf64_Sym> symbols(1, Elf64_Sym{});
    for (const SymbolSpec& spec : symbols_) {
      Elf64_Sym symbol{};
      symbol.st_name = AppendString(strtab, spec.name);
      if (spec.name_offset) symbol.st_name = *spec.name_offset;
      symbol.st_info = spec.info;
      symbol.st_shndx = spec.section;
      symbol.st_size = spec.size;
      symbols.push_back(symbol);
    }

    std::vector<std::byte> image(sizeof(Elf64_Ehdr));
    auto place = [&](std::size_t index, const void* data, std::size_t size, std::size_t align) {
      image.resize((image.size() + align - 1) / align * align);
      headers[index].sh_offset = image.size();
      headers[index].sh_size = size;
      headers[index].sh_addralign = align;
      const auto* bytes = static_cast<const std::byte*>(data);
      image.insert(image.end(), bytes, bytes + size);
    };
    place(1, shstrtab.data(), shstrtab.size(), 1);
    place(2, strtab.data(), strtab.size(), 1);
    place(3, symbols.data(), symbols.size() * sizeof(Elf64_Sym), 8);
    headers[3].sh_entsize = sizeof(Elf64_Sym);
    headers[3].sh_link = 2;
    for (std::size_t i = 0; i < all.size(); ++i) headers[i].sh_type = all[i].type;
    for (std::size_t i = kFirstAddedSection; i < all.size(); ++i) {
      if (all[i].type == SHT_NOBITS) {
        headers[i].sh_offset = image.size();
        headers[i].sh_size = all[i].size;
      } else {
        const std::vector<std::byte> zeros(all[i].size);
        place(i, zeros.data(), zeros.size(), 4);
      }
    }

    image.resize((image.size() + 7) / 8 * 8);
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_EXEC;
    header.e_machine = EM_CUDA;
    header.e_version = EV_CURRENT;
    header.e_ehsize = sizeof(Elf64_Ehdr);
    header.e_shoff = image.size();
    header.e_shentsize = sizeof(Elf64_Shdr);
    header.e_shnum = static_cast<std::uint16_t>(all.size());
    header.e_shstrndx = 1;
    std::memcpy(image.data(), &header, sizeof(header));
    const auto* table = reinterpret_cast<const std::byte*>(headers.data());
    image.insert(image.end(), table, table + headers.size() * sizeof(Elf64_Shdr));
    return image;
  }

 private:
  static constexpr std::size_t kFirstAddedSection = 4;
  struct SectionSpec {
    std::string name;
    std::uint32_t type;
    std::uint64_t size;
  };
  struct SymbolSpec {
    std::string name;
    unsigned char info;
    std::uint16_t section;
    std::uint64_t size;
    std::optional<std::uint32_t> name_offset;
  };

  static std::uint32_t AppendString(std::string& table, const std::string& value) {
    const auto offset = static_cast<std::uint32_t>(table.size());
    table += value;
    table.push_back('\0');
    return offset;
  }

  std::vector<SectionSpec> sections_;
  std::vector<SymbolSpec> symbols_;
};

template <typename T>
void Put(std::vector<std::byte>& image, std::size_t offset, T value) {
  ASSERT_LE(offset + sizeof(T), image.size());
  std::memcpy(image.data() + offset, &value, sizeof(T));
}

template <typename T>
T Get(const std::vector<std::byte>& image, std::size_t offset) {
  T value{};
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

// Offset of section `index`'s header in a built image.
std::size_t SectionHeaderOffset(const std::vector<std::byte>& image, std::size_t index) {
  return Get<Elf64_Off>(image, offsetof(Elf64_Ehdr, e_shoff)) + index * sizeof(Elf64_Shdr);
}

// One variable in .nv.global, so every check in the error tests is reached with a parseable rest.
std::vector<std::byte> SmallCubin() {
  CubinBuilder builder;
  const std::uint16_t global = builder.AddSection(".nv.global", SHT_NOBITS, 16);
  builder.AddSymbol("counter", STT_OBJECT, STB_LOCAL, global, 4);
  builder.AddSymbol("vprintf", STT_FUNC, STB_GLOBAL, SHN_UNDEF, 0);
  return builder.Build();
}

// Both readers reject `image` with InvalidArgument whose message contains `needle`.
void ExpectInvalid(const std::vector<std::byte>& image, const std::string& needle) {
  const auto variables = ReadCubinVariables(image);
  ASSERT_FALSE(variables.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(variables.status().code(), StatusCode::kInvalidArgument) << variables.status().ToString();
  EXPECT_THAT(variables.status().message(), HasSubstr(needle));
  const auto effects = ReadCubinSideEffects(image);
  ASSERT_FALSE(effects.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(effects.status().code(), StatusCode::kInvalidArgument) << effects.status().ToString();
  EXPECT_THAT(effects.status().message(), HasSubstr(needle));
}

std::vector<std::byte> ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// Hand-built images

TEST(ReadCubinVariablesTest, ListsGlobalAndUserConstantObjectsSortedByName) {
  CubinBuilder builder;
  const std::uint16_t global = builder.AddSection(".nv.global", SHT_NOBITS, 512);
  const std::uint16_t global_init = builder.AddSection(".nv.global.init", SHT_PROGBITS, 16);
  const std::uint16_t constant3 = builder.AddSection(".nv.constant3", SHT_PROGBITS, 64);
  const std::uint16_t params = builder.AddSection(".nv.constant0.k", SHT_PROGBITS, 32);
  const std::uint16_t literals = builder.AddSection(".nv.constant2.k", SHT_PROGBITS, 32);
  const std::uint16_t address_table = builder.AddSection(".nv.constant4", SHT_PROGBITS, 32);
  const std::uint16_t shared = builder.AddSection(".nv.shared.k", SHT_NOBITS, 64);
  const std::uint16_t text = builder.AddSection(".text.k", SHT_PROGBITS, 128);
  builder.AddSymbol("zeta", STT_OBJECT, STB_LOCAL, global, 8);
  builder.AddSymbol("alpha", STT_OBJECT, STB_GLOBAL, constant3, 16);
  builder.AddSymbol("initialized", STT_OBJECT, STB_LOCAL, global_init, 4);
  builder.AddSymbol("relocatable", kCudaObjectType, STB_GLOBAL, global, 12);
  // Not variables: other banks, shared memory, functions, section symbols, the compiler's
  // string literals, undefined and absolute objects.
  builder.AddSymbol("param_blob", STT_OBJECT, STB_LOCAL, params, 8);
  builder.AddSymbol("k.const_opt.0.12", kCudaObjectType, STB_LOCAL, literals, 12);
  builder.AddSymbol("address_of_zeta", STT_OBJECT, STB_LOCAL, address_table, 8);
  builder.AddSymbol("tile", STT_OBJECT, STB_LOCAL, shared, 64);
  builder.AddSymbol("k", STT_FUNC, STB_GLOBAL, text, 128);
  builder.AddSymbol(".nv.global", STT_SECTION, STB_LOCAL, global, 0);
  builder.AddSymbol("$str", STT_OBJECT, STB_LOCAL, global_init, 7);
  builder.AddSymbol(".nv.reservedSmem.offset0", STT_OBJECT, STB_WEAK, SHN_UNDEF, 4);
  builder.AddSymbol("absolute", STT_OBJECT, STB_GLOBAL, SHN_ABS, 4);

  const auto variables = ReadCubinVariables(builder.Build());
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables,
              ElementsAre(CubinVariable{"alpha", 16, true}, CubinVariable{"initialized", 4, false},
                          CubinVariable{"relocatable", 12, false}, CubinVariable{"zeta", 8, false}));
}

TEST(ReadCubinVariablesTest, NameDefinedTwiceIsListedOnceWithTheLargerSize) {
  CubinBuilder builder;
  const std::uint16_t global = builder.AddSection(".nv.global", SHT_NOBITS, 64);
  builder.AddSymbol("shared_name", STT_OBJECT, STB_WEAK, global, 8);
  builder.AddSymbol("shared_name", STT_OBJECT, STB_GLOBAL, global, 24);
  builder.AddSymbol("other", STT_OBJECT, STB_GLOBAL, global, 4);

  const auto variables = ReadCubinVariables(builder.Build());
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables,
              ElementsAre(CubinVariable{"other", 4, false}, CubinVariable{"shared_name", 24, false}));
}

TEST(ReadCubinVariablesTest, ImageWithoutSymbolTableHasNoVariables) {
  CubinBuilder builder;
  auto image = builder.Build();
  // Turn .symtab into a plain PROGBITS section: nothing to list, nothing wrong.
  Put<Elf64_Word>(image, SectionHeaderOffset(image, 3) + offsetof(Elf64_Shdr, sh_type), SHT_PROGBITS);
  const auto variables = ReadCubinVariables(image);
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables, IsEmpty());
}

TEST(ReadCubinSideEffectsTest, UndefinedVprintfIsPrintf) {
  CubinBuilder builder;
  builder.AddSymbol("vprintf", STT_FUNC, STB_GLOBAL, SHN_UNDEF, 0);
  const auto effects = ReadCubinSideEffects(builder.Build());
  ASSERT_TRUE(effects.ok()) << effects.status().ToString();
  EXPECT_TRUE(effects->uses_printf);
  EXPECT_FALSE(effects->uses_device_malloc);
}

TEST(ReadCubinSideEffectsTest, UndefinedMallocOrFreeIsDeviceMalloc) {
  for (const char* name : {"malloc", "free"}) {
    CubinBuilder builder;
    builder.AddSymbol(name, STT_FUNC, STB_GLOBAL, SHN_UNDEF, 0);
    const auto effects = ReadCubinSideEffects(builder.Build());
    ASSERT_TRUE(effects.ok()) << effects.status().ToString();
    EXPECT_FALSE(effects->uses_printf) << name;
    EXPECT_TRUE(effects->uses_device_malloc) << name;
  }
}

TEST(ReadCubinSideEffectsTest, DefinedFunctionsWithThoseNamesAreNotRuntimeCalls) {
  CubinBuilder builder;
  const std::uint16_t text = builder.AddSection(".text.vprintf", SHT_PROGBITS, 16);
  builder.AddSymbol("vprintf", STT_FUNC, STB_GLOBAL, text, 16);
  builder.AddSymbol("malloc", STT_FUNC, STB_GLOBAL, text, 16);
  builder.AddSymbol("printf", STT_FUNC, STB_GLOBAL, SHN_UNDEF, 0);  // device printf is vprintf
  const auto effects = ReadCubinSideEffects(builder.Build());
  ASSERT_TRUE(effects.ok()) << effects.status().ToString();
  EXPECT_FALSE(effects->uses_printf);
  EXPECT_FALSE(effects->uses_device_malloc);
}

// ---------------------------------------------------------------------------------------------
// Malformed images: each is InvalidArgument naming the problem, from both readers.

TEST(ReadCubinVariablesTest, EmptyImageIsInvalid) { ExpectInvalid({}, "empty"); }

TEST(ReadCubinVariablesTest, NonElfImageIsInvalid) {
  std::vector<std::byte> image(256, std::byte{0x42});
  ExpectInvalid(image, "not an ELF image");
  ExpectInvalid({std::byte{0x7f}, std::byte{'E'}}, "not an ELF image");
}

TEST(ReadCubinVariablesTest, FatBinaryIsNamedAsSuch) {
  std::vector<std::byte> image(64, std::byte{0});
  Put<std::uint32_t>(image, 0, 0xBA55ED50);
  ExpectInvalid(image, "fat binary");
}

TEST(ReadCubinVariablesTest, Elf32IsInvalid) {
  auto image = SmallCubin();
  image[EI_CLASS] = std::byte{ELFCLASS32};
  ExpectInvalid(image, "not a 64-bit ELF");
}

TEST(ReadCubinVariablesTest, BigEndianElfIsInvalid) {
  auto image = SmallCubin();
  image[EI_DATA] = std::byte{ELFDATA2MSB};
  ExpectInvalid(image, "not a little-endian ELF");
}

TEST(ReadCubinVariablesTest, TruncatedHeaderIsInvalid) {
  auto image = SmallCubin();
  image.resize(40);
  ExpectInvalid(image, "truncated ELF header");
}

TEST(ReadCubinVariablesTest, HostElfIsNotACubin) {
  auto image = SmallCubin();
  Put<Elf64_Half>(image, offsetof(Elf64_Ehdr, e_machine), EM_X86_64);
  ExpectInvalid(image, "not a CUDA cubin");
}

TEST(ReadCubinVariablesTest, MissingSectionTableIsInvalid) {
  auto image = SmallCubin();
  Put<Elf64_Half>(image, offsetof(Elf64_Ehdr, e_shnum), 0);
  ExpectInvalid(image, "no section header table");
}

TEST(ReadCubinVariablesTest, TruncatedSectionTableIsInvalid) {
  auto image = SmallCubin();
  image.resize(image.size() - 10);
  ExpectInvalid(image, "truncated section header table");
  // A table offset near 2^64 must not wrap around into the image.
  image = SmallCubin();
  Put<Elf64_Off>(image, offsetof(Elf64_Ehdr, e_shoff), ~Elf64_Off{0} - 8);
  ExpectInvalid(image, "truncated section header table");
}

TEST(ReadCubinVariablesTest, SectionNameTableIndexOutOfRangeIsInvalid) {
  auto image = SmallCubin();
  Put<Elf64_Half>(image, offsetof(Elf64_Ehdr, e_shstrndx), 99);
  ExpectInvalid(image, "section name string table index 99 out of range");
}

TEST(ReadCubinVariablesTest, SymbolTableOutsideTheImageIsInvalid) {
  auto image = SmallCubin();
  Put<Elf64_Xword>(image, SectionHeaderOffset(image, 3) + offsetof(Elf64_Shdr, sh_size), 1 << 20);
  ExpectInvalid(image, "truncated symbol table");
}

TEST(ReadCubinVariablesTest, SymbolTableOfPartialEntriesIsInvalid) {
  auto image = SmallCubin();
  const std::size_t size_at = SectionHeaderOffset(image, 3) + offsetof(Elf64_Shdr, sh_size);
  Put<Elf64_Xword>(image, size_at, Get<Elf64_Xword>(image, size_at) - 5);
  ExpectInvalid(image, "truncated symbol table");
}

TEST(ReadCubinVariablesTest, SymbolStringTableIndexOutOfRangeIsInvalid) {
  auto image = SmallCubin();
  Put<Elf64_Word>(image, SectionHeaderOffset(image, 3) + offsetof(Elf64_Shdr, sh_link), 40);
  ExpectInvalid(image, "string table index 40 of the symbol table (section 3) out of range");
}

TEST(ReadCubinVariablesTest, SymbolNameOffsetOutOfRangeIsInvalid) {
  CubinBuilder builder;
  const std::uint16_t global = builder.AddSection(".nv.global", SHT_NOBITS, 16);
  builder.AddSymbol("counter", STT_OBJECT, STB_LOCAL, global, 4, /*name_offset=*/4096);
  ExpectInvalid(builder.Build(), "symbol 1 name offset 4096 out of range");
}

TEST(ReadCubinVariablesTest, UnterminatedSymbolNameIsInvalid) {
  auto image = SmallCubin();
  // Drop .strtab's final NUL: "vprintf", the last name, now runs off the table's end.
  const std::size_t size_at = SectionHeaderOffset(image, 2) + offsetof(Elf64_Shdr, sh_size);
  Put<Elf64_Xword>(image, size_at, Get<Elf64_Xword>(image, size_at) - 1);
  ExpectInvalid(image, "no terminating NUL");
}

TEST(ReadCubinVariablesTest, SymbolSectionIndexOutOfRangeIsInvalid) {
  CubinBuilder builder;
  builder.AddSymbol("counter", STT_OBJECT, STB_LOCAL, 77, 4);
  ExpectInvalid(builder.Build(), "symbol 'counter' has section index 77 out of range");
}

TEST(ReadCubinVariablesTest, SectionNameOffsetOutOfRangeIsInvalid) {
  auto image = SmallCubin();
  Put<Elf64_Word>(image, SectionHeaderOffset(image, 4) + offsetof(Elf64_Shdr, sh_name), 5000);
  const auto variables = ReadCubinVariables(image);
  ASSERT_FALSE(variables.ok());
  EXPECT_EQ(variables.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(variables.status().message(), HasSubstr("section 4 name offset 5000 out of range"));
}

// Every prefix and every single-byte corruption of a valid image gives a result or
// InvalidArgument (and, under ASan, no out-of-bounds read).
TEST(ReadCubinVariablesTest, CorruptedImagesNeverReadOutOfBounds) {
  CubinBuilder builder;
  const std::uint16_t global = builder.AddSection(".nv.global", SHT_NOBITS, 16);
  const std::uint16_t constant3 = builder.AddSection(".nv.constant3", SHT_PROGBITS, 16);
  builder.AddSymbol("counter", STT_OBJECT, STB_LOCAL, global, 4);
  builder.AddSymbol("coeffs", STT_OBJECT, STB_LOCAL, constant3, 16);
  builder.AddSymbol("malloc", STT_FUNC, STB_GLOBAL, SHN_UNDEF, 0);
  const std::vector<std::byte> valid = builder.Build();

  auto check = [](const std::vector<std::byte>& image, const std::string& what) {
    // Exact-size heap copy, so ASan sees any read past the end.
    const auto copy = std::make_unique<std::byte[]>(image.size());
    if (!image.empty()) std::memcpy(copy.get(), image.data(), image.size());
    const std::span<const std::byte> bytes(copy.get(), image.size());
    const auto variables = ReadCubinVariables(bytes);
    if (!variables.ok()) {
      EXPECT_EQ(variables.status().code(), StatusCode::kInvalidArgument) << what;
    }
    const auto effects = ReadCubinSideEffects(bytes);
    if (!effects.ok()) {
      EXPECT_EQ(effects.status().code(), StatusCode::kInvalidArgument) << what;
    }
  };
  for (std::size_t length = 0; length < valid.size(); ++length) {
    const std::vector<std::byte> prefix(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(length));
    // The section header table is last: no proper prefix of the image holds it.
    EXPECT_FALSE(ReadCubinVariables(prefix).ok()) << "prefix of " << length << " bytes";
    check(prefix, "prefix of " + std::to_string(length) + " bytes");
  }
  for (std::size_t offset = 0; offset < valid.size(); ++offset) {
    for (const std::byte flip : {std::byte{0x01}, std::byte{0x80}, std::byte{0xff}}) {
      std::vector<std::byte> image = valid;
      image[offset] ^= flip;
      check(image, "byte " + std::to_string(offset) + " ^ " + std::to_string(std::to_integer<int>(flip)));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Cubins nvcc built from the fixtures (CMakeLists.txt), when a toolkit was found

#ifdef GPUPROF_CUBIN_FIXTURE

TEST(ReadCubinVariablesTest, NvccCubinListsDeviceAndConstantVariables) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_FIXTURE;
  const auto variables = ReadCubinVariables(image);
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables,
              ElementsAre(CubinVariable{"coeffs", 128, true}, CubinVariable{"counter", 4, false},
                          CubinVariable{"generation", 4, false}, CubinVariable{"table", 400, false}));
}

TEST(ReadCubinVariablesTest, NvccRelocatableCubinListsTheSameVariables) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_RDC_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_RDC_FIXTURE;
  const auto variables = ReadCubinVariables(image);
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables,
              ElementsAre(CubinVariable{"coeffs", 128, true}, CubinVariable{"counter", 4, false},
                          CubinVariable{"generation", 4, false}, CubinVariable{"table", 400, false}));
}

// nvcc puts the section header table near the end, followed only by the program headers (which
// the reader does not need): every cut before the table's end is an error, every later one reads the
// same variables.
TEST(ReadCubinVariablesTest, NvccCubinTruncatedBeforeItsSectionTableIsInvalid) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_FIXTURE);
  ASSERT_GE(image.size(), sizeof(Elf64_Ehdr)) << "cannot read " << GPUPROF_CUBIN_FIXTURE;
  const auto whole = ReadCubinVariables(image);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const std::size_t table_end = Get<Elf64_Off>(image, offsetof(Elf64_Ehdr, e_shoff)) +
                                Get<Elf64_Half>(image, offsetof(Elf64_Ehdr, e_shnum)) * sizeof(Elf64_Shdr);
  ASSERT_LE(table_end, image.size());
  for (std::size_t length = 0; length < image.size(); ++length) {
    const std::vector<std::byte> prefix(image.begin(), image.begin() + static_cast<std::ptrdiff_t>(length));
    const auto variables = ReadCubinVariables(prefix);
    if (length < table_end) {
      ASSERT_FALSE(variables.ok()) << "prefix of " << length << " bytes";
      EXPECT_EQ(variables.status().code(), StatusCode::kInvalidArgument) << variables.status().ToString();
    } else {
      ASSERT_TRUE(variables.ok()) << "prefix of " << length << " bytes: " << variables.status().ToString();
      EXPECT_EQ(*variables, *whole) << "prefix of " << length << " bytes";
    }
  }
}

TEST(ReadCubinVariablesTest, NvccPrintfFormatStringIsNotAVariable) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_PRINTF_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_PRINTF_FIXTURE;
  const auto variables = ReadCubinVariables(image);
  ASSERT_TRUE(variables.ok()) << variables.status().ToString();
  EXPECT_THAT(*variables, IsEmpty());
}

TEST(ReadCubinSideEffectsTest, NvccCubinWithoutPrintfOrMallocHasNone) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_FIXTURE;
  const auto effects = ReadCubinSideEffects(image);
  ASSERT_TRUE(effects.ok()) << effects.status().ToString();
  EXPECT_FALSE(effects->uses_printf);
  EXPECT_FALSE(effects->uses_device_malloc);
}

TEST(ReadCubinSideEffectsTest, NvccPrintfCubinUsesPrintf) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_PRINTF_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_PRINTF_FIXTURE;
  const auto effects = ReadCubinSideEffects(image);
  ASSERT_TRUE(effects.ok()) << effects.status().ToString();
  EXPECT_TRUE(effects->uses_printf);
  EXPECT_FALSE(effects->uses_device_malloc);
}

TEST(ReadCubinSideEffectsTest, NvccNewDeleteCubinUsesDeviceMalloc) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_MALLOC_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_MALLOC_FIXTURE;
  const auto effects = ReadCubinSideEffects(image);
  ASSERT_TRUE(effects.ok()) << effects.status().ToString();
  EXPECT_FALSE(effects->uses_printf);
  EXPECT_TRUE(effects->uses_device_malloc);
}

TEST(ReadCubinKernelNamesTest, NvccCubinNamesItsKernelAndNoVariable) {
  const std::vector<std::byte> image = ReadFile(GPUPROF_CUBIN_FIXTURE);
  ASSERT_FALSE(image.empty()) << "cannot read " << GPUPROF_CUBIN_FIXTURE;
  const auto kernels = ReadCubinKernelNames(image);
  ASSERT_TRUE(kernels.ok()) << kernels.status().ToString();
  EXPECT_THAT(*kernels, ElementsAre("_Z1kPKiPfi"));  // k(const int*, float*, int)
}

#endif  // GPUPROF_CUBIN_FIXTURE

TEST(ReadCubinKernelNamesTest, NonElfImageIsInvalid) {
  const std::vector<std::byte> image(64, std::byte{0x41});
  const auto kernels = ReadCubinKernelNames(image);
  ASSERT_FALSE(kernels.ok());
  EXPECT_EQ(kernels.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gpuprof::device::cuda
