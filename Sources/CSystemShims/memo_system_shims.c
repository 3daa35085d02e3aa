#include "memo_system_shims.h"

#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>

int memo_is_memory_file_system(const char *path) {
  struct statfs info;
  if (statfs(path, &info) != 0) return -1;
  return (info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC) ? 1 : 0;
}

int memo_terminal_size(int fd, unsigned short *rows, unsigned short *columns) {
  struct winsize size;
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
  *rows = size.ws_row;
  *columns = size.ws_col;
  return 0;
}
