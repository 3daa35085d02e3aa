#ifndef MEMO_PEER_SYSTEM_SHIMS_H
#define MEMO_PEER_SYSTEM_SHIMS_H

/// 1 when `path` is on a memory-backed file system (tmpfs or ramfs), 0 when it is not,
/// -1 when it cannot be examined. statfs(2) is not exported by Swift's Glibc module.
int memo_is_memory_file_system(const char *path);

/// The terminal's size in rows and columns (ioctl TIOCGWINSZ, which Swift cannot call: ioctl
/// is variadic). Returns 0, or -1 with errno set.
int memo_terminal_size(int fd, unsigned short *rows, unsigned short *columns);

/// What the process does first, so nothing it later holds (keys, memo text) can be read
/// out of it: prctl(PR_SET_DUMPABLE, 0) (no core dump, no ptrace by other processes of the
/// user, /proc/PID/mem and environ readable by root only) and RLIMIT_CORE 0. prctl is
/// variadic, which Swift cannot call. Returns a bit set: 1 not dumpable, 2 core limit 0.
int memo_harden_process(void);

/// prctl(PR_GET_DUMPABLE): 0 when the process cannot be dumped or traced, -1 on error.
int memo_process_dumpable(void);

/// The soft limits on locked memory and on core files, in bytes; -2 means unlimited, -1
/// that it could not be read.
long long memo_memlock_limit(void);
long long memo_core_limit(void);

/// Names the calling thread (prctl(PR_SET_NAME), 15 bytes kept): `top -H` and crash
/// reports show it. pthread_setname_np needs _GNU_SOURCE, which Swift's Glibc module lacks.
void memo_name_this_thread(const char *name);

/// A socket that hears the kernel's news of network links and addresses (an interface up
/// or down, an address added or removed: NETLINK_ROUTE, groups RTMGRP_LINK and
/// RTMGRP_IPV4_IFADDR / RTMGRP_IPV6_IFADDR), non-blocking; its messages are only counted,
/// never parsed. sockaddr_nl is not exported by Swift's Glibc module. Returns the
/// descriptor, or -1 with errno set. No packet leaves the machine for this.
int memo_open_route_watch(void);

#endif
