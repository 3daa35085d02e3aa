import Foundation
import MemoSystem

@testable import MemoNode

/// Writes in some nodes' folders (their stores, their status files), seen through inotify:
/// what a test of running engines waits for between two looks, instead of sleeping.
final class NodeWrites: Sendable {
  private let watch: FolderChangeWatch
  private let folders: [String]

  init(_ nodes: [TestNode]) throws {
    watch = try FolderChangeWatch()
    folders = nodes.flatMap { [$0.paths.dataDirectory, $0.paths.stateDirectory] }
  }

  /// Waits for the next write, at most `seconds` (the bound of a quiet spell).
  func next(upTo seconds: Double) async throws {
    // A folder made since the last wait (the state folder, by the engine) is watched too.
    for folder in folders where !watch.isWatching(folder) {
      _ = watch.watch(folder, ignoring: ["-shm", ".open-lock"])
    }
    let watch = self.watch
    _ = try await BlockingIO.run("mp.test.writes") { watch.wait(upTo: seconds) }
  }

  /// Looks at `condition` after each write until it holds or `seconds` passed.
  func until(seconds: Double, _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if try condition() { return true }
      try await next(upTo: 1)
    }
    return try condition()
  }
}
