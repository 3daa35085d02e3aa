import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Reads a running process's memory through `/proc/PID/mem`, region by region as
/// `/proc/PID/maps` lists them, and says which of some byte strings occur in it. Root can
/// read the memory of any process (CAP_SYS_PTRACE), memo-peer's undumpable ones included;
/// that is the point: what root could read of a relay while it relays.
enum ProcessMemory {
  struct Scan {
    /// Indices into the needles of those found.
    var found: Set<Int> = []
    var bytesRead = 0
    var regions = 0
  }

  /// Regions larger than this are reservations nobody touched (read as zeros, slowly).
  static let largestRegion = 1 << 30

  static func scan(pid: Int32, for needles: [[UInt8]]) throws -> Scan {
    let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
    let fd = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw LabError("cannot open /proc/\(pid)/mem: errno \(errno)") }
    defer { close(fd) }
    var scan = Scan()
    let overlap = (needles.map(\.count).max() ?? 1) - 1
    let chunkSize = 1 << 20
    var buffer = [UInt8](repeating: 0, count: chunkSize + overlap)
    for line in maps.split(separator: "\n") {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      guard fields.count >= 2, fields[1].hasPrefix("r"), !line.hasSuffix("[vvar]"), !line.hasSuffix("[vsyscall]")
      else { continue }
      let bounds = fields[0].split(separator: "-").compactMap { UInt64($0, radix: 16) }
      guard bounds.count == 2, bounds[1] > bounds[0], bounds[1] - bounds[0] <= UInt64(largestRegion) else { continue }
      scan.regions += 1
      var offset = bounds[0]
      var carried = 0
      while offset < bounds[1] {
        let want = Int(min(UInt64(chunkSize), bounds[1] - offset))
        let got = buffer.withUnsafeMutableBytes { raw in
          pread(fd, raw.baseAddress! + carried, want, off_t(Int64(bitPattern: offset)))
        }
        guard got > 0 else { break }  // a page that cannot be read ends the region
        scan.bytesRead += got
        let filled = carried + got
        buffer.withUnsafeBytes { raw in
          for (index, needle) in needles.enumerated() where !scan.found.contains(index) {
            if contains(raw.baseAddress!, filled, needle) { scan.found.insert(index) }
          }
        }
        // Keep the tail, so a needle across two chunks is found too.
        let kept = min(overlap, filled)
        buffer.withUnsafeMutableBytes { raw in
          _ = memmove(raw.baseAddress!, raw.baseAddress! + (filled - kept), kept)
        }
        carried = kept
        offset += UInt64(got)
      }
    }
    return scan
  }

  /// Whether `count` bytes at `haystack` contain `needle`: memchr for its first byte, then
  /// memcmp (a generic search over a debug build is far too slow for megabytes, and Glibc's
  /// memmem is not visible to Swift).
  static func contains(_ haystack: UnsafeRawPointer, _ count: Int, _ needle: [UInt8]) -> Bool {
    guard let first = needle.first, count >= needle.count else { return false }
    var start = haystack
    let end = haystack + (count - needle.count + 1)
    return needle.withUnsafeBytes { wanted in
      while start < end, let hit = memchr(start, Int32(first), end - start) {
        if memcmp(hit, wanted.baseAddress!, needle.count) == 0 { return true }
        start = UnsafeRawPointer(hit) + 1
      }
      return false
    }
  }
}
