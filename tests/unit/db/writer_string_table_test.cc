// StringTable: the id spaces of DB_SPEC "Decisions", dense ids, empty strings, stable storage.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "db/string_table.h"

namespace gpuprof::db {
namespace {

TEST(StringTableTest, EachSpaceCountsFromItsBase) {
  StringTable table;
  EXPECT_EQ(table.Intern(StringSpace::kDevice, "cudaLaunchKernel").id, 0u);
  EXPECT_EQ(table.Intern(StringSpace::kDevice, "KERNEL").id, 1u);
  EXPECT_EQ(table.Intern(StringSpace::kFramework, "aten::mm").id, 1u << 28);
  EXPECT_EQ(table.Intern(StringSpace::kFramework, "aten::add").id, (1u << 28) + 1);
  EXPECT_EQ(table.Intern(StringSpace::kMemory, "PTA").id, 2u << 28);
}

TEST(StringTableTest, RepeatedValueKeepsItsIdAndIsNewOnlyOnce) {
  StringTable table;
  StringTable::Interned first = table.Intern(StringSpace::kFramework, "aten::mm");
  StringTable::Interned again = table.Intern(StringSpace::kFramework, std::string("aten::") + "mm");
  EXPECT_TRUE(first.is_new);
  EXPECT_FALSE(again.is_new);
  EXPECT_EQ(first.id, again.id);
  EXPECT_EQ(table.size(StringSpace::kFramework), 1u);
  EXPECT_EQ(table.Find(StringSpace::kFramework, "aten::mm"), first.id);
  EXPECT_EQ(table.Find(StringSpace::kDevice, "aten::mm"), kInvalidStringId);
}

TEST(StringTableTest, SameValueInTwoSpacesGetsTwoIds) {
  StringTable table;
  StringTable::Interned device = table.Intern(StringSpace::kDevice, "gemm");
  StringTable::Interned framework = table.Intern(StringSpace::kFramework, "gemm");
  EXPECT_TRUE(device.is_new);
  EXPECT_TRUE(framework.is_new);
  EXPECT_NE(device.id, framework.id);
}

TEST(StringTableTest, EmptyStringIsTheInvalidIdAndNeverNew) {
  StringTable table;
  StringTable::Interned empty = table.Intern(StringSpace::kDevice, "");
  EXPECT_EQ(empty.id, 4294967295u);
  EXPECT_FALSE(empty.is_new);
  EXPECT_EQ(table.size(StringSpace::kDevice), 0u);
  EXPECT_EQ(table.Intern(StringSpace::kDevice, "x").id, 0u);  // the empty string took no id
}

TEST(StringTableTest, StoredCopiesOutliveTheCallersStringsAndLargeValuesWork) {
  StringTable table;
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 20000; ++i) {
    std::string value = "frame_" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 97), 'x');
    ids.push_back(table.Intern(StringSpace::kFramework, value).id);
  }
  std::string large(300000, 'L');  // larger than an arena block
  std::uint64_t large_id = table.Intern(StringSpace::kFramework, large).id;
  for (int i = 0; i < 20000; ++i) {
    std::string value = "frame_" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 97), 'x');
    EXPECT_EQ(table.Find(StringSpace::kFramework, value), ids[static_cast<std::size_t>(i)]) << i;
  }
  EXPECT_EQ(table.Find(StringSpace::kFramework, large), large_id);
  EXPECT_EQ(table.Find(StringSpace::kFramework, std::string(300000, 'M')), kInvalidStringId);
  EXPECT_EQ(table.overflowed(), 0u);
}

}  // namespace
}  // namespace gpuprof::db
