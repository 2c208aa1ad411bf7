#include "base/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/errno_text.h"

namespace gpuprof::base {

Status SyncPath(const std::string& path, bool directory) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return DataLossError("open " + path + " for fsync: " + ErrnoText(errno));
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return DataLossError("fsync " + path + ": " + ErrnoText(err));
  return OkStatus();
}

Status PublishDurably(const std::string& temp_path, const std::string& final_path,
                      const std::string& directory) {
  GPUPROF_RETURN_IF_ERROR(SyncPath(temp_path, /*directory=*/false));
  if (std::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    return DataLossError("rename " + temp_path + " -> " + final_path + ": " + ErrnoText(errno));
  }
  return SyncPath(directory, /*directory=*/true);
}

}  // namespace gpuprof::base
