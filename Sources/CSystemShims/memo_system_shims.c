#include "memo_system_shims.h"

#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

int memo_harden_process(void) {
  int done = 0;
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0) done |= 1;
  struct rlimit none = {0, 0};
  if (setrlimit(RLIMIT_CORE, &none) == 0) done |= 2;
  return done;
}

int memo_process_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

static long long soft_limit(int resource) {
  struct rlimit limit;
  if (getrlimit(resource, &limit) != 0) return -1;
  return limit.rlim_cur == RLIM_INFINITY ? -2 : (long long)limit.rlim_cur;
}

long long memo_memlock_limit(void) { return soft_limit(RLIMIT_MEMLOCK); }

long long memo_core_limit(void) { return soft_limit(RLIMIT_CORE); }

void memo_name_this_thread(const char *name) { (void)prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

int memo_open_route_watch(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -1;
  struct sockaddr_nl address;
  memset(&address, 0, sizeof address);
  address.nl_family = AF_NETLINK;
  address.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}
