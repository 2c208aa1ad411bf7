// The file a command writes (`export -o`, `report -o`), so that gpuprof never replaces what it did
// not create. What the path names decides how it is written: a new name or a regular file is
// written under a temporary name and renamed over it (the final name never holds a partial file);
// a character device or FIFO (/dev/null, a pipe a viewer reads) is written into as it is; "-" is
// standard output, and so is a path that reaches this process's standard output or error (-o
// /dev/stdout or /dev/stderr: a terminal, a pipe, a socket) when that is not a regular file; a
// symbolic link is followed to what it names and that is treated by the same rules; a directory, a
// dangling link, a block device or another socket is refused before any work. A temporary file is
// removed when the command is interrupted (base/interrupt_cleanup.h, once the CLI installed it).
//
//   GPUPROF_ASSIGN_OR_RETURN(auto file, OutputFile::Create(path, "trace.json"));
//   file->buffer()->append(...); GPUPROF_RETURN_IF_ERROR(file->MaybeFlush());
//   GPUPROF_ASSIGN_OR_RETURN(std::uint64_t bytes, file->Commit());  // not committed: removed
//
// Thread-safety: one thread per object. Errors: InvalidArgument naming the path and the fix,
// DataLoss for a write that fails (the disk full).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/errno_text.h"
#include "base/interrupt_cleanup.h"
#include "gpuprof/status.h"

namespace gpuprof::db {

inline constexpr std::size_t kOutputFlushBytes = 1 << 20;  // the buffer is written out past this

class OutputFile {
 public:
  static StatusOr<std::unique_ptr<OutputFile>> Create(const std::string& requested_path,
                                                      std::string_view example_name) {
    GPUPROF_ASSIGN_OR_RETURN(Target target, ClassifyOutput(requested_path, example_name));
    auto file = std::unique_ptr<OutputFile>(new OutputFile(target.path));
    if (target.kind == TargetKind::kStdout) {
      file->fd_ = target.fd;
      file->owns_fd_ = false;
      file->direct_ = true;
    } else if (target.kind == TargetKind::kStream) {
      // No O_TRUNC, no O_CREAT: a device or FIFO is written into, never replaced.
      file->fd_ = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (file->fd_ < 0) {
        const int error = errno;
        return InvalidArgumentError("cannot open the output " + target.path +
                                    " for writing: " + base::ErrnoText(error));
      }
      file->direct_ = true;
    } else {
      GPUPROF_RETURN_IF_ERROR(file->CreateTemporary());
    }
    file->buffer_.reserve(kOutputFlushBytes + std::size_t{64} * 1024);
    return file;
  }

  ~OutputFile() {
    if (fd_ >= 0 && owns_fd_) ::close(fd_);
    if (!committed_ && !temp_path_.empty()) {
      ::unlink(temp_path_.c_str());
      base::ForgetOnInterrupt();
    }
  }

  std::string* buffer() noexcept { return &buffer_; }

  Status MaybeFlush() {
    if (buffer_.size() < kOutputFlushBytes) return OkStatus();
    return Flush();
  }

  // Writes what is left, closes, and renames the temporary file to the final name.
  StatusOr<std::uint64_t> Commit() {
    GPUPROF_RETURN_IF_ERROR(Flush());
    int fd = fd_;
    fd_ = -1;
    if (!owns_fd_) {
      committed_ = true;
      return written_;
    }
    if (::close(fd) != 0) {
      const int error = errno;
      return DataLossError("writing " + temp_path_ + " failed at close: " + base::ErrnoText(error));
    }
    if (direct_) {
      committed_ = true;
      return written_;
    }
    // No fsync: an export can be redone; what matters is that the final name never holds a
    // partial file, and rename gives that.
    if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
      const int error = errno;
      return InvalidArgumentError("cannot rename " + temp_path_ + " to " + final_path_ + ": " +
                                  base::ErrnoText(error));
    }
    committed_ = true;
    base::ForgetOnInterrupt();
    return written_;
  }

  enum class TargetKind { kStdout, kStream, kRenameOver };
  struct Target {
    TargetKind kind;
    std::string path;  // the file finally written: a followed link's target
    int fd = -1;       // kStdout: the descriptor written (standard output or error)
  };

  // True when what `requested` names is this process's standard output (so the command's own
  // messages go to standard error instead of into the output).
  static bool IsStandardOutput(const std::string& requested) {
    StatusOr<Target> target = ClassifyOutput(requested, "");
    return target.ok() && target->kind == TargetKind::kStdout && target->fd == STDOUT_FILENO;
  }

  static StatusOr<Target> ClassifyOutput(const std::string& requested, std::string_view example_name) {
    if (requested == "-") return Target{TargetKind::kStdout, "standard output", STDOUT_FILENO};
    std::string path = requested;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
      const int error = errno;
      if (error == ENOENT) return Target{TargetKind::kRenameOver, path};
      return InvalidArgumentError("cannot use the output " + path + ": " + base::ErrnoText(error));
    }
    // /dev/stdout of a piped command is a link to /proc/self/fd/1, itself a link to "pipe:[N]",
    // which no path names (and a socket cannot be opened at all): what this process already holds
    // is written through its descriptor.
    struct stat reached {};
    if (::stat(path.c_str(), &reached) == 0 && !S_ISREG(reached.st_mode) && !S_ISDIR(reached.st_mode)) {
      for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
        struct stat held {};
        if (::fstat(fd, &held) == 0 && held.st_dev == reached.st_dev && held.st_ino == reached.st_ino) {
          return Target{TargetKind::kStdout, path, fd};
        }
      }
    }
    if (S_ISLNK(info.st_mode)) {
      std::error_code ec;
      const std::filesystem::path target = std::filesystem::canonical(path, ec);
      if (ec) {
        return InvalidArgumentError("the output " + path +
                                    " is a symbolic link whose target cannot be reached (" + ec.message() +
                                    "); give the target's path, or remove the link");
      }
      path = target.string();
      if (::stat(path.c_str(), &info) != 0) {
        const int error = errno;
        return InvalidArgumentError("cannot use the output " + path + ": " + base::ErrnoText(error));
      }
    }
    if (S_ISREG(info.st_mode)) return Target{TargetKind::kRenameOver, path};
    if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) return Target{TargetKind::kStream, path};
    if (S_ISDIR(info.st_mode)) {
      return InvalidArgumentError("the output " + path + " is a directory; name a file, e.g. -o " +
                                  (std::filesystem::path(path) / example_name).string());
    }
    return InvalidArgumentError("the output " + path +
                                " is not a regular file, character device or FIFO (a block device or a "
                                "socket); gpuprof writes only those");
  }

 private:
  Status CreateTemporary() {
    // O_EXCL with our pid in the name: two exports to one target never share a temporary file.
    // 0666 & ~umask, like any file the user creates (mkstemp would force 0600).
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      temp_path_ = final_path_ + ".tmp." + std::to_string(::getpid()) +
                   (attempt == 0 ? "" : "." + std::to_string(attempt));
      fd_ = base::CreateRemovedOnInterrupt(temp_path_, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) {
        const int error = errno;
        temp_path_.clear();
        return InvalidArgumentError("cannot create the output file " + final_path_ + ": " +
                                    base::ErrnoText(error) +
                                    (error == ENOENT ? " (does its directory exist?)" : ""));
      }
    }
    if (fd_ < 0) return AlreadyExistsError("cannot create a temporary file next to " + final_path_);
    return OkStatus();
  }

  explicit OutputFile(std::string final_path) : final_path_(std::move(final_path)) {}

  Status Flush() {
    const char* data = buffer_.data();
    std::size_t left = buffer_.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, data, left);
      if (n < 0) {
        const int error = errno;
        if (error == EINTR) continue;
        return DataLossError("writing " + (temp_path_.empty() ? final_path_ : temp_path_) + " failed: " +
                             base::ErrnoText(error) + (error == ENOSPC ? " (the disk is full)" : ""));
      }
      data += n;
      left -= static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
    }
    buffer_.clear();
    return OkStatus();
  }

  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  bool owns_fd_ = true;  // false for standard output, which is flushed but never closed
  bool direct_ = false;  // written in place (stdout, a device, a FIFO): nothing to rename
  bool committed_ = false;
  std::string buffer_;
  std::uint64_t written_ = 0;
};

}  // namespace gpuprof::db
