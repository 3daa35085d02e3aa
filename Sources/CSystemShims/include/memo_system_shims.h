#ifndef MEMO_PEER_SYSTEM_SHIMS_H
#define MEMO_PEER_SYSTEM_SHIMS_H

/// 1 when `path` is on a memory-backed file system (tmpfs or ramfs), 0 when it is not,
/// -1 when it cannot be examined. statfs(2) is not exported by Swift's Glibc module.
int memo_is_memory_file_system(const char *path);

/// The terminal's size in rows and columns (ioctl TIOCGWINSZ, which Swift cannot call: ioctl
/// is variadic). Returns 0, or -1 with errno set.
int memo_terminal_size(int fd, unsigned short *rows, unsigned short *columns);

#endif
