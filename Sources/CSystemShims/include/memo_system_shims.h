#ifndef MEMO_PEER_SYSTEM_SHIMS_H
#define MEMO_PEER_SYSTEM_SHIMS_H

/// 1 when `path` is on a memory-backed file system (tmpfs or ramfs), 0 when it is not,
/// -1 when it cannot be examined. statfs(2) is not exported by Swift's Glibc module.
int memo_is_memory_file_system(const char *path);

#endif
