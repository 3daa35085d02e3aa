import MemoCore
import MemoCrypto
import MemoSystem
import MemoTransfer
import MemoVault

/// What `init` found or made.
public struct NodeSetup: Sendable {
  /// The store was made now (not found).
  public var created: Bool
  public var paths: NodePaths
  public var schemaVersion: Int
  public var memos: Int
  public var protection: DeviceKeys.Status
}

/// Where `export` writes the archive.
public enum ArchiveDestination: Sendable {
  /// A file, replaced atomically once the archive is complete.
  case file(String)
  /// An open descriptor (the CLI's stdout for `--output -`), named in errors as `name`.
  case descriptor(Int32, name: String)
}

/// What `import --markdown` found and did: the files found, what the store took of the
/// valid ones, and each file refused.
public struct MarkdownImport: Sendable {
  /// A file left out, with why. The error's message names the file and the problem, never
  /// the file's text.
  public struct Refused: Sendable, Equatable {
    public let path: String
    public let error: MemoPeerError
  }

  /// Markdown and text files found (valid and refused).
  public var files: Int
  public var summary: MarkdownFiles.ImportSummary
  /// In the order found.
  public var refused: [Refused]
}

/// What an archive import did to the store.
public struct ImportCounts: Sendable, Equatable {
  public var added = 0
  public var updated = 0
  /// Already here at the same or a newer revision.
  public var unchanged = 0

  public init(added: Int = 0, updated: Int = 0, unchanged: Int = 0) {
    self.added = added
    self.updated = updated
    self.unchanged = unchanged
  }
}

/// Setting a node up, and moving memos between nodes: `init`, `export` and `import` (as a
/// passphrase-sealed archive, or as Markdown files).
public struct TransferUseCases {
  let app: App

  /// Creates this node's device key and store, or finds them.
  public func initialize() throws -> NodeSetup {
    let existed = PrivateFiles.exists(app.paths.databasePath)
    let store = try app.store()
    let protection = try app.keys.status()
    return NodeSetup(
      created: !existed, paths: app.paths, schemaVersion: store.schemaVersion, memos: try store.count(),
      protection: protection)
  }

  /// Writes every memo to an archive sealed with a key derived from the passphrase (asked
  /// after the checks); the device key is never part of it. `progress` hears the count every
  /// 500 memos. Returns how many memos it holds.
  public func exportArchive(
    to destination: ArchiveDestination, passphrase: () throws -> SecureBytes, kdf: ScryptParameters = .standard,
    progress: (Int) -> Void = { _ in }
  ) throws -> Int {
    try app.requireUnlocked()
    let store = try app.store()
    let passphrase = try passphrase()
    let file: AtomicFile?
    let writer: MemoArchiveWriter
    switch destination {
    case .file(let path):
      file = try AtomicFile(path: path)
      writer = try MemoArchiveWriter(fd: file!.fd, destination: path, passphrase: passphrase, parameters: kdf)
    case .descriptor(let fd, let name):
      file = nil
      writer = try MemoArchiveWriter(fd: fd, destination: name, passphrase: passphrase, parameters: kdf)
    }
    try store.forEachMemo { memo in
      try writer.append(memo)
      if writer.count % 500 == 0 { progress(writer.count) }
    }
    try writer.finish()
    try file?.commit()
    return writer.count
  }

  /// Adds the memos of an archive made by `export`: the whole archive is authenticated
  /// before anything is stored, then imported in one transaction (all or nothing); memos
  /// here at the same or a newer revision are left alone.
  public func importArchive(
    _ path: String, passphrase: () throws -> SecureBytes, progress: (Int) -> Void = { _ in }
  ) throws -> ImportCounts {
    let bytes = try PrivateFiles.read(path, limit: MemoArchiveReader.maxArchiveBytes)
    try app.requireUnlocked()
    let store = try app.store()
    let reader = try MemoArchiveReader(bytes: bytes, source: path, passphrase: try passphrase())
    try reader.forEachMemo { _ in }  // authenticate every chunk before writing anything
    var counts = ImportCounts()
    var done = 0
    try store.batch {
      try reader.forEachMemo { memo in
        switch try store.importMemo(memo) {
        case .added: counts.added += 1
        case .updated: counts.updated += 1
        case .unchanged: counts.unchanged += 1
        }
        done += 1
        if done % 500 == 0 { progress(done) }
      }
    }
    return counts
  }

  /// One Markdown file per memo into `folder` (new or empty unless `force`): plain text.
  public func exportMarkdown(to folder: String, force: Bool, progress: (Int) -> Void = { _ in }) throws -> Int {
    try app.requireUnlocked()
    return try MarkdownFiles.export(try app.store(), to: folder, force: force, progress: progress)
  }

  /// Markdown and text files and folders of them: every file read and checked first
  /// (`reading` hears the count every 500 files, `read` when all are), then the valid ones
  /// added in one transaction. A file refused (not valid UTF-8, too large, front matter
  /// memo-peer cannot hold, a memo the rules refuse) is listed with its reason and left
  /// out; with `allOrNothing`, one refused file keeps every file out, as before issue 40.
  public func importMarkdown(
    _ paths: [String], allOrNothing: Bool = false, reading: (_ done: Int, _ of: Int) -> Void = { _, _ in },
    read: () -> Void = {}
  ) throws -> MarkdownImport {
    let (files, ignored) = try MarkdownFiles.collect(paths)
    var sources: [MarkdownFiles.Source] = []
    var refused: [MarkdownImport.Refused] = []
    for (index, file) in files.enumerated() {
      do { sources.append(try MarkdownFiles.read(file)) } catch let error as MemoPeerError {
        refused.append(MarkdownImport.Refused(path: file, error: error))
      }
      if (index + 1) % 500 == 0 { reading(index + 1, files.count) }
    }
    read()
    try app.requireUnlocked()
    let taken = allOrNothing && !refused.isEmpty ? [] : sources
    var summary = try app.store().importMarkdown(taken, now: app.now)
    summary.ignored = ignored
    return MarkdownImport(files: files.count, summary: summary, refused: refused)
  }

}
