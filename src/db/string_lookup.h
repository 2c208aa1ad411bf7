// Names by STRING_IDS id, for the read side: one prepared lookup reused (StringLookup), and the SQL
// expression that names an id column inside a query (StringValueSql). Both give "#<id>" for an id
// STRING_IDS lacks, and work on a DB without STRING_IDS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "db/profile_reader.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

class StringLookup {
 public:
  static StatusOr<StringLookup> Create(const ProfileReader& reader) {
    StringLookup lookup;
    if (reader.HasStringValues()) {
      GPUPROF_ASSIGN_OR_RETURN(Query query, reader.Prepare("SELECT value FROM STRING_IDS WHERE id = ?1"));
      lookup.query_ = std::move(query);
      lookup.available_ = true;
    }
    return lookup;
  }

  // The string for `id`; "#<id>" when STRING_IDS has no such row, "(none)" for NULL.
  StatusOr<std::string> Get(std::optional<std::int64_t> id) {
    if (!id.has_value()) return std::string("(none)");
    if (available_) {
      query_.Reset();
      query_.BindInt(1, *id);
      GPUPROF_ASSIGN_OR_RETURN(bool row, query_.Step());
      if (row) return std::string(query_.Text(0));
    }
    return "#" + std::to_string(*id);
  }

 private:
  Query query_;
  bool available_ = false;
};

// The SQL for the string `column` names (its STRING_IDS value), "#<id>" where it cannot be looked up.
inline std::string StringValueSql(const ProfileReader& reader, const std::string& column) {
  return reader.HasStringValues()
             ? "IFNULL((SELECT value FROM STRING_IDS WHERE id = " + column + "), '#' || " + column + ")"
             : "'#' || " + column;
}

}  // namespace gpuprof::db
