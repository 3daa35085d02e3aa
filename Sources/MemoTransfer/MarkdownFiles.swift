import FoundationEssentials
import MemoCore
import MemoMarkdown
import MemoStore
import MemoSystem

#if canImport(Glibc)
  import Glibc
#endif

/// Markdown files in and out of the store (docs/FORMATS.md, "Markdown files").
///
/// Import reads and checks every file before the store is touched, then adds them in one
/// transaction: all or nothing. Export writes one 0600 file per memo into a 0700 folder; a
/// new folder is filled under a temporary name and renamed into place when complete.
public enum MarkdownFiles {
  /// More files than this in one import is refused (a folder named by mistake, say `/`).
  public static let maxFiles = 10_000
  /// Folders deeper than this below a named folder are not entered.
  public static let maxDepth = 16
  static let extensions: Set<String> = ["md", "markdown", "txt"]

  /// One file read and checked, not yet stored.
  public struct Source: Sendable {
    public let path: String
    public let memo: MarkdownMemo
  }

  /// What an import found and did.
  public struct ImportSummary: Sendable, Equatable {
    public var added = 0
    public var updated = 0
    /// Already here at the same or a newer revision.
    public var unchanged = 0
    /// Files in the named folders that are not .md, .markdown or .txt (or are links,
    /// hidden, or too deep), left alone.
    public var ignored = 0
  }

  /// The Markdown and text files named by `paths`: files as given, folders walked (without
  /// following links, skipping hidden entries). Refuses a named file of another kind.
  public static func collect(_ paths: [String]) throws -> (files: [String], ignored: Int) {
    var files: [String] = []
    var ignored = 0
    for path in paths {
      var info = stat()
      try PrivateFiles.call("stat", orThrow: "cannot read \(path)") { stat(path, &info) }
      if info.st_mode & S_IFMT == S_IFDIR {
        ignored += try walk(path, depth: 0, into: &files)
      } else {
        guard info.st_mode & S_IFMT == S_IFREG, isMarkdown(path) else {
          throw MemoPeerError(
            .invalidInput, "\(path) is not a .md, .markdown or .txt file",
            hint: "name Markdown or text files, or folders holding them")
        }
        files.append(path)
      }
      guard files.count <= maxFiles else {
        throw MemoPeerError(
          .tooLarge, "more than \(maxFiles) files to import", hint: "import the folders in smaller parts")
      }
    }
    return (files, ignored)
  }

  private static func walk(_ folder: String, depth: Int, into files: inout [String]) throws -> Int {
    let names: [String]
    do { names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted() } catch {
      throw MemoPeerError(.io, "cannot list \(folder)", hint: "check that it is readable")
    }
    var ignored = 0
    for name in names {
      let path = folder + "/" + name
      var info = stat()
      // An entry that cannot be examined (gone meanwhile) is counted as ignored, not an error.
      guard !name.hasPrefix("."), lstat(path, &info) == 0 else {
        ignored += 1
        continue
      }
      switch info.st_mode & S_IFMT {
      case S_IFDIR where depth < maxDepth: ignored += try walk(path, depth: depth + 1, into: &files)
      case S_IFREG where isMarkdown(name): files.append(path)
      default: ignored += 1
      }
      guard files.count <= maxFiles else {
        throw MemoPeerError(
          .tooLarge, "more than \(maxFiles) files to import", hint: "import the folders in smaller parts")
      }
    }
    return ignored
  }

  private static func isMarkdown(_ path: String) -> Bool {
    extensions.contains(PathText.pathExtension(path).lowercased())
  }

  /// Reads and checks one file: size, UTF-8, front matter, the memo rules. Errors name the
  /// file and the problem, never its text.
  public static func read(_ path: String) throws -> Source {
    let fd = try PrivateFiles.call("open", orThrow: "cannot read \(path)") {
      open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
    }
    defer { close(fd) }
    var info = stat()
    // A file that cannot be examined is refused like one of another kind.
    guard (try? System.call("fstat") { fstat(fd, &info) }) != nil, info.st_mode & S_IFMT == S_IFREG else {
      throw MemoPeerError(.invalidInput, "\(path) is not a regular file")
    }
    let bytes: [UInt8]
    do { bytes = try PrivateFiles.readAll(fd, limit: MarkdownMemo.maxFileBytes, what: path) } catch let error
      as MemoPeerError where error.code == .tooLarge
    {
      throw MemoPeerError(
        .tooLarge, "\(path) is larger than a memo can be (\(MemoRules.maxBodyBytes) bytes of text)",
        hint: "split it into several files")
    }
    let text = try MemoRules.decodeUTF8(bytes, source: path)
    // A modification time set far into the future (touch -d) stays within what peers accept.
    let seconds = min(max(Timestamp(info.st_mtim.tv_sec), 0), SyncLimits.timestamps.upperBound / 1000 - 1)
    let modified = seconds * 1000 + Timestamp(info.st_mtim.tv_nsec / 1_000_000)
    let memo = try MarkdownMemo.parse(text, source: path, modified: modified)
    do {
      _ = try MemoRules.validated(
        MemoDraft(title: memo.title ?? "", body: memo.body, tags: memo.tags, isPrivate: memo.isPrivate))
    } catch let error as MemoPeerError {
      throw MemoPeerError(error.code, "\(path): \(error.message)", hint: error.hint, remedy: error.remedy)
    }
    return Source(path: path, memo: memo)
  }

  /// Writes every live memo as a file into `folder`. A folder that exists must be empty
  /// unless `force`; its mode becomes 0700 either way. Returns the number of files.
  public static func export(
    _ store: MemoStore, to folder: String, force: Bool, progress: (Int) -> Void
  ) throws -> Int {
    var info = stat()
    if lstat(folder, &info) == 0 {
      guard info.st_mode & S_IFMT == S_IFDIR else {
        throw MemoPeerError(.usage, "\(folder) exists and is not a folder", hint: "name a new or empty folder")
      }
      let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
      guard entries.isEmpty || force else {
        throw MemoPeerError(
          .usage, "\(folder) is not empty", hint: "name a new or empty folder, or pass --force to write into it")
      }
      try PrivateFiles.call("chmod", orThrow: "cannot make \(folder) private") { chmod(folder, 0o700) }
      return try write(store, into: folder, progress: progress)
    }
    // A new folder appears whole or not at all.
    let parent = PathText.parent(folder)
    let staging = try PrivateFiles.makeUniqueDirectory(
      in: parent.isEmpty ? "." : parent, prefix: "." + PathText.lastComponent(folder) + ".partial")
    do {
      let count = try write(store, into: staging, progress: progress)
      try PrivateFiles.call("rename", orThrow: "cannot create \(folder)") { rename(staging, folder) }
      return count
    } catch {
      try? FileManager.default.removeItem(atPath: staging)
      throw error
    }
  }

  private static func write(_ store: MemoStore, into folder: String, progress: (Int) -> Void) throws -> Int {
    var count = 0
    try store.forEachMemo { memo in
      try PrivateFiles.writeAtomically(
        Array(MarkdownMemo.render(memo).utf8), to: folder + "/" + MarkdownMemo.fileName(for: memo))
      count += 1
      if count % 500 == 0 { progress(count) }
    }
    return count
  }
}

extension MemoStore {
  /// Adds checked Markdown files in one transaction: a failure leaves the store as it was.
  /// A file with an id already here at the same or a newer revision changes nothing.
  public func importMarkdown(_ sources: [MarkdownFiles.Source], now: Timestamp) throws -> MarkdownFiles.ImportSummary {
    var summary = MarkdownFiles.ImportSummary()
    try batch {
      for source in sources {
        let file = source.memo
        let memo = Memo(
          id: file.id ?? MemoID(), title: file.title ?? "", body: file.body, tags: file.tags,
          created: file.created ?? now, updated: file.updated ?? file.created ?? now, isPrivate: file.isPrivate,
          revision: file.revision ?? 1, origin: .replica(replicaID))
        do {
          switch try importMemo(memo) {
          case .added: summary.added += 1
          case .updated: summary.updated += 1
          case .unchanged: summary.unchanged += 1
          }
        } catch let error as MemoPeerError {
          throw MemoPeerError(error.code, "\(source.path): \(error.message)", hint: error.hint, remedy: error.remedy)
        }
      }
    }
    return summary
  }
}
