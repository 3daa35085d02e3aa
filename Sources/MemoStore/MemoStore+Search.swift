import Dispatch
import FoundationEssentials
import MemoCore
import MemoCrypto
import MemoProtocol

extension MemoStore {
  /// `search`, one match at a time, newest first (the listing's order); `body` may throw to
  /// stop early.
  ///
  /// Opening three sealed fields of every memo is most of a search, so it runs on every
  /// core: this thread reads rows into a batch (the sealed bytes copied out of SQLite) while
  /// workers open and match the batch before it, each with its own copy of the key and its
  /// own buffers, and their findings are handed to `body` here, in order. At most two
  /// batches exist at a time (each at most `SearchBatch.maximumRows` rows or about
  /// `SearchBatch.maximumBytes` of sealed bytes), so memory stays bounded whatever the
  /// number of memos; nothing is written anywhere. A failure (a field that does not open, a
  /// damaged row, SQLite's error) is thrown once every memo before it has been handed on,
  /// as a search one row at a time would.
  public func search(_ query: String, notebook: NotebookID? = nil, _ body: (MemoSummary) throws -> Void) throws {
    let matcher = TextMatcher(query: query)
    let sealer = try sealer()
    let batches = [SearchBatch(), SearchBatch()]
    let group = DispatchGroup()
    var workers: [SearchWorker] = []
    var reader = RowReader()
    defer {
      group.wait()
      for worker in workers { worker.wipe() }
      for batch in batches { batch.wipe() }
    }
    // The notebook keys bodies kept in records are opened with, looked up once per search.
    var rings: [NotebookID: NotebookKeyring] = [:]
    let key = { (notebook: NotebookID, id: String) throws -> NotebookKey? in
      if let ring = rings[notebook] { return ring[id] }
      let ring = try self.keyring(notebook)
      rings[notebook] = ring
      return ring[id]
    }
    try sql {
      workers = try (0..<Self.searchThreads).map { index in
        SearchWorker(sealer: index == 0 ? sealer : try sealer.duplicate(), matcher: matcher)
      }
      let rows = try db.prepare(notebook == nil ? Self.searchQuery : Self.notebookSearchQuery)
      if let notebook { try rows.bind(1, notebook) }
      var pending: SearchBatch?
      var readFailure: (any Error)?
      var next = 0
      repeat {
        let batch = batches[next]
        next = 1 - next
        do {
          if try !batch.fill(from: rows, &reader, key: key) { readFailure = Self.endOfRows }
        } catch {
          readFailure = error
        }
        if let pending {
          group.wait()
          try Self.emit(pending, workers, body)
        }
        pending = batch.rows.isEmpty ? nil : batch
        if let pending { Self.start(pending, on: workers, group) }
      } while readFailure == nil
      if let pending {
        group.wait()
        try Self.emit(pending, workers, body)
      }
      if let readFailure, !(readFailure is EndOfRows) { throw readFailure }
    }
  }

  /// Not an error: how the reading loop of `search` learns the rows ran out.
  private struct EndOfRows: Error {}
  private static let endOfRows = EndOfRows()

  /// The threads `search` opens memos on: one per core it may use, at most 4 (beyond that,
  /// reading the rows is the limit); 1 opens them on the calling thread.
  static var searchThreads: Int { max(1, min(4, ProcessInfo.processInfo.activeProcessorCount)) }

  /// Hands each worker its share of `batch` (a worker alone works on this thread).
  private static func start(_ batch: SearchBatch, on workers: [SearchWorker], _ group: DispatchGroup) {
    let count = batch.rows.count
    guard workers.count > 1 else {
      workers[0].process(batch, 0..<count)
      return
    }
    for (index, worker) in workers.enumerated() {
      let share = (count * index / workers.count)..<(count * (index + 1) / workers.count)
      DispatchQueue.global(qos: .userInitiated).async(group: group) { worker.process(batch, share) }
    }
  }

  /// What the workers found in `batch`, handed on in the batch's order.
  private static func emit(_ batch: SearchBatch, _ workers: [SearchWorker], _ body: (MemoSummary) throws -> Void)
    throws
  {
    for worker in workers {
      for found in worker.found {
        switch found {
        case .memo(let memo): try body(memo)
        case .failure(let error): throw error
        }
      }
    }
  }
}

/// Rows of `search` as read: the sealed fields and the id copied out of SQLite into one
/// buffer, the rest parsed. Filled by the reading thread, then only read by the workers
/// until they are done with it.
///
/// `@unchecked Sendable`: never written while shared. `search` fills a batch only after
/// `group.wait()` has seen every worker done with it (two batches alternate), and the
/// dispatch group's enter/leave order those writes before the workers' reads and after them.
final class SearchBatch: @unchecked Sendable {
  static let maximumRows = 1024
  /// A batch is closed once its sealed bytes pass this (a memo's fields are at most a few
  /// hundred KiB more).
  static let maximumBytes = 1 << 20

  struct Row {
    var id: Range<Int>
    var title: Range<Int>
    var tags: Range<Int>
    /// The sealed body; empty when the row keeps it in its record (`record`).
    var body: Range<Int>
    var record: RecordBody?
    var revision: Int64
    var created: Timestamp
    var updated: Timestamp
    var isPrivate: Bool
    var notebook: NotebookID?
    var author: DeviceID?
  }

  /// Where a body kept in a record is (schema 12): the record and what its sealing
  /// context is made of, copied like the other fields.
  struct RecordBody {
    var notebook: Range<Int>
    var keyID: Range<Int>
    var sealed: Range<Int>
    var origin: Range<Int>
    var seq: Int64
    var clock: Range<Int>
    /// The memo a conflict copy is of (the record names it); nil: the row's own id.
    var conflictOf: Range<Int>?
  }

  private(set) var bytes: [UInt8] = []
  private(set) var rows: [Row] = []
  /// The notebook keys of this batch's records, by notebook and key id: the workers read
  /// them while the next batch is filled, so each batch has its own.
  private(set) var keys: [String: NotebookKey] = [:]

  static func keyName(_ notebook: NotebookID, _ id: String) -> String { notebook.rawValue + "/" + id }

  /// Reads rows of `MemoStore.searchQuery` until the batch is full; false once the rows
  /// ran out. (The arrays are filled as locals: appending to a class's stored array checks
  /// exclusivity at every call.)
  func fill(
    from query: SQLiteStatement, _ reader: inout RowReader, key: (NotebookID, String) throws -> NotebookKey?
  ) throws -> Bool {
    var bytes: [UInt8] = []
    var rows: [Row] = []
    swap(&bytes, &self.bytes)
    swap(&rows, &self.rows)
    bytes.removeAll(keepingCapacity: true)
    rows.removeAll(keepingCapacity: true)
    keys.removeAll(keepingCapacity: true)
    defer {
      self.bytes = bytes
      self.rows = rows
    }
    func copy(_ column: Int32) -> Range<Int> {
      let start = bytes.count
      query.withBytes(column) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
      return start..<bytes.count
    }
    while rows.count < Self.maximumRows && bytes.count < Self.maximumBytes {
      guard try query.step() else { return false }
      let notebook = reader.notebook(query, 7)
      var row = Row(
        id: copy(0), title: copy(1), tags: copy(2), body: copy(9), record: nil, revision: query.int64(6),
        created: query.int64(3), updated: query.int64(4), isPrivate: query.int64(5) != 0,
        notebook: notebook, author: reader.device(query, 8))
      if row.body.isEmpty, let notebook, !query.isNull(10), !query.isNull(11), !query.isNull(12) {
        let keyID = query.text(10)
        let name = Self.keyName(notebook, keyID)
        if keys[name] == nil, let found = try key(notebook, keyID) { keys[name] = found }
        row.record = RecordBody(
          notebook: copy(7), keyID: copy(10), sealed: copy(11), origin: copy(12), seq: query.int64(13), clock: copy(14),
          conflictOf: query.isNull(15) ? nil : copy(15))
      }
      rows.append(row)
    }
    return true
  }

  /// Zeroes the sealed bytes (not secret, but nothing of the search is left behind).
  func wipe() {
    bytes.withUnsafeMutableBufferPointer { $0.initialize(repeating: 0) }
    bytes.removeAll()
    rows.removeAll()
    keys.removeAll()
  }
}

/// One thread's share of a search: its copy of the key, its buffers, and what it found in
/// the rows it was given, in their order (a failure ends its share).
///
/// `@unchecked Sendable`: each worker runs on one queue at a time (`start` hands it one share
/// of a batch), and `search` reads `found` or wipes it only after `group.wait()`, which
/// orders the worker's writes before those reads.
final class SearchWorker: @unchecked Sendable {
  enum Found {
    case memo(MemoSummary)
    case failure(any Error)
  }

  /// The fields opened last and the sealing context; taken out of the object while a share
  /// is processed, so the loop works on locals (a class's stored arrays passed `inout` cost
  /// an exclusivity check at every use).
  private struct Buffers {
    var title: [UInt8] = []
    var tags: [UInt8] = []
    var body: [UInt8] = []
    /// A record's whole content, when the body is kept there, and its sealing context.
    var record: [UInt8] = []
    var recordContext: [UInt8] = []
    var context = SealingContext.MemoFieldBuffer()
  }

  private let sealer: AES256GCMKey
  private let matcher: TextMatcher
  /// This worker's own copies of the notebook keys it opened records with.
  private var notebookSealers: [(notebook: [UInt8], keyID: [UInt8], sealer: AES256GCMKey)] = []
  private var buffers = Buffers()
  private(set) var found: [Found] = []

  init(sealer: AES256GCMKey, matcher: TextMatcher) {
    self.sealer = sealer
    self.matcher = matcher
  }

  func process(_ batch: SearchBatch, _ share: Range<Int>) {
    var buffers = self.buffers
    self.buffers = Buffers()
    var found: [Found] = []
    swap(&found, &self.found)
    found.removeAll(keepingCapacity: true)
    defer {
      self.buffers = buffers
      self.found = found
    }
    let rows = batch.rows
    let keys = batch.keys
    batch.bytes.withUnsafeBytes { bytes in
      for index in share {
        do {
          if let memo = try match(rows[index], keys, bytes, &buffers) { found.append(.memo(memo)) }
        } catch {
          found.append(.failure(error))
          return
        }
      }
    }
  }

  /// The memo when its title, tags or body contain the text; the body is opened only when
  /// the title and tags do not.
  private func match(
    _ row: SearchBatch.Row, _ keys: [String: NotebookKey], _ bytes: UnsafeRawBufferPointer, _ buffers: inout Buffers
  ) throws
    -> MemoSummary?
  {
    let idBytes = UnsafeRawBufferPointer(rebasing: bytes[row.id]).assumingMemoryBound(to: UInt8.self)
    guard let id = MemoID(canonicalUTF8: idBytes) else { throw MemoStore.invalidRowID }
    func open(_ field: SealingContext.MemoField, _ range: Range<Int>, into plaintext: inout [UInt8]) throws {
      try MemoStore.open(
        field, of: id, revision: row.revision, UnsafeRawBufferPointer(rebasing: bytes[range]), sealer: sealer,
        into: &plaintext, context: &buffers.context)
    }
    try open(.title, row.title, into: &buffers.title)
    try open(.tags, row.tags, into: &buffers.tags)
    if !matcher.matches(buffers.title) && !matcher.matches(buffers.tags) {
      if let record = row.record {
        try openRecordBody(
          of: id, record, idRange: row.id, notebook: row.notebook, keys: keys, bytes, into: &buffers)
      } else {
        try open(.body, row.body, into: &buffers.body)
      }
      guard matcher.matches(buffers.body) else { return nil }
    }
    return MemoSummary(
      id: id, title: String(decoding: buffers.title, as: UTF8.self), tags: TagList.decode(buffers.tags),
      created: row.created, updated: row.updated, isPrivate: row.isPrivate, revision: row.revision,
      notebook: row.notebook, author: row.author)
  }

  /// The body of a row that keeps it in its record, opened under this worker's copy of the
  /// notebook key into `buffers.body` (the record's whole content passes through
  /// `buffers.record`). The record's sealing context is written from the row's bytes, and
  /// the key is found by comparing bytes: nothing is parsed or allocated per row.
  private func openRecordBody(
    of id: MemoID, _ record: SearchBatch.RecordBody, idRange: Range<Int>, notebook: NotebookID?,
    keys: [String: NotebookKey], _ bytes: UnsafeRawBufferPointer, into buffers: inout Buffers
  ) throws {
    func part(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[range]) }
    guard let notebook, record.seq >= 0 else { throw MemoStore.bodyIntegrityFailure(of: id, nil) }
    let sealer = try notebookSealer(
      notebook: part(record.notebook), keyID: part(record.keyID), of: id, in: notebook, keys: keys)
    SealingContext.record(
      into: &buffers.recordContext, notebook: part(record.notebook), keyID: part(record.keyID),
      memo: part(record.conflictOf ?? idRange), origin: part(record.origin), seq: UInt64(record.seq),
      encodedClock: part(record.clock))
    do {
      try buffers.recordContext.withUnsafeBytes { associated in
        try sealer.open(part(record.sealed), associatedData: associated, into: &buffers.record)
      }
    } catch {
      throw MemoStore.bodyIntegrityFailure(of: id, error)
    }
    guard let range = buffers.record.withUnsafeBytes({ RecordContent.bodyRange(in: $0) }) else {
      throw MemoStore.bodyIntegrityFailure(of: id, nil)
    }
    buffers.body.removeAll(keepingCapacity: true)
    buffers.body.append(contentsOf: buffers.record[range])
  }

  /// This worker's copy of the key generation `keyID` of the notebook, from the batch's keys
  /// the first time (a household's records use a handful of keys: a linear search of bytes).
  private func notebookSealer(
    notebook: UnsafeRawBufferPointer, keyID: UnsafeRawBufferPointer, of id: MemoID, in parsed: NotebookID,
    keys: [String: NotebookKey]
  ) throws -> AES256GCMKey {
    if let known = notebookSealers.first(where: {
      $0.notebook.elementsEqual(notebook) && $0.keyID.elementsEqual(keyID)
    }) {
      return known.sealer
    }
    let name = SearchBatch.keyName(parsed, String(decoding: keyID, as: UTF8.self))
    guard let key = keys[name] else { throw MemoStore.missingBodyKey(of: id, notebook: parsed) }
    let sealer: AES256GCMKey
    do { sealer = try AES256GCMKey(key.material) } catch {
      throw MemoPeerError(.crypto, "the cryptographic library failed to load a notebook key", diagnostics: "\(error)")
    }
    notebookSealers.append((Array(notebook), Array(keyID), sealer))
    return sealer
  }

  /// Zeroes what was opened last.
  func wipe() {
    RowReader.wipe(&buffers.title)
    RowReader.wipe(&buffers.tags)
    RowReader.wipe(&buffers.body)
    RowReader.wipe(&buffers.record)
    found.removeAll()
  }
}
