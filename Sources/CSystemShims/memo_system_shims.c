#include "memo_system_shims.h"

#include <linux/magic.h>
#include <sys/vfs.h>

int memo_is_memory_file_system(const char *path) {
  struct statfs info;
  if (statfs(path, &info) != 0) return -1;
  return (info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC) ? 1 : 0;
}
