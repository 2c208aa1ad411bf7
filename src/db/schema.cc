#include "db/schema.h"

#include <string>
#include <vector>

#include "db/schema_sql.h"

namespace gpuprof::db {

std::span<const std::string_view> SchemaTableNames() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> all = SchemaSqlTables(SchemaPart::kFormatTables);
    for (std::string_view name : SchemaSqlTables(SchemaPart::kGpuprofTables)) all.push_back(name);
    return all;
  }();
  return names;
}

Status CreateSchema(const Connection& conn) {
  GPUPROF_RETURN_IF_ERROR(conn.Exec(SchemaSql(SchemaPart::kFormatTables)));
  GPUPROF_RETURN_IF_ERROR(conn.Exec(SchemaSql(SchemaPart::kGpuprofTables)));
  GPUPROF_RETURN_IF_ERROR(conn.Exec(SchemaSql(SchemaPart::kSpecRows)));
  return conn.Exec(SchemaSql(SchemaPart::kMsprofRows));
}

Status CreateIndexes(const Connection& conn) {
  GPUPROF_RETURN_IF_ERROR(conn.Exec(SchemaSql(SchemaPart::kFormatIndexes)));
  return conn.Exec(SchemaSql(SchemaPart::kGpuprofIndexes));
}

}  // namespace gpuprof::db
