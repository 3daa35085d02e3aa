import MemoCore
import MemoCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// What `list` and `search` carry from one row to the next: the buffers a row's sealed
/// fields are opened into and their sealing context is built in, and the devices and
/// notebooks already parsed. A new array per field, and an author and a notebook parsed
/// again on every row, were more than half of listing 100,000 memos.
///
/// The buffers hold the last fields opened until `wipe()`, which every listing calls when
/// it ends.
struct RowReader {
  /// The row's fields as opened (`MemoStore.open(_:of:revision:column:of:sealer:into:context:)`).
  var title: [UInt8] = []
  var tags: [UInt8] = []
  /// The sealing context of the field being opened.
  var context = SealingContext.MemoFieldBuffer()
  private var devices = ParsedTextCache<DeviceID>()
  private var notebooks = ParsedTextCache<NotebookID>()

  /// The device ID in `column` (nil when NULL or not one), parsed once per distinct text.
  mutating func device(_ row: SQLiteStatement, _ column: Int32) -> DeviceID? {
    guard !row.isNull(column) else { return nil }
    return row.withBytes(column) { devices.value($0, parse: DeviceID.init) }
  }

  /// The notebook ID in `column` (nil when NULL or not one), parsed once per distinct text.
  mutating func notebook(_ row: SQLiteStatement, _ column: Int32) -> NotebookID? {
    guard !row.isNull(column) else { return nil }
    return row.withBytes(column) { notebooks.value($0, parse: NotebookID.init) }
  }

  /// The memo id in `column`, read in place; nil when it is not a canonical id.
  func memoID(_ row: SQLiteStatement, _ column: Int32) -> MemoID? {
    row.withBytes(column) { MemoID(canonicalUTF8: $0.assumingMemoryBound(to: UInt8.self)) }
  }

  /// Zeroes the fields last opened: a listing's decrypted text does not outlive it here.
  mutating func wipe() {
    Self.wipe(&title)
    Self.wipe(&tags)
  }

  /// Zeroes the whole storage: a shorter field leaves a longer one's end past `count`.
  static func wipe(_ bytes: inout [UInt8]) {
    bytes.append(contentsOf: repeatElement(0, count: bytes.capacity - bytes.count))
    bytes.withUnsafeMutableBytes { raw in
      if let base = raw.baseAddress { memset(base, 0, raw.count) }
    }
    bytes.removeAll()
  }
}

/// Values parsed from a column's text, kept for the texts seen last: a household's memos
/// name a few devices and notebooks, so a lookup is a comparison of bytes with one of a
/// handful of entries, never a string or a hash. At most `capacity` entries, replaced in
/// turn, so a store of many authors costs a parse per row, as before, and no more.
struct ParsedTextCache<Value> {
  private static var capacity: Int { 8 }
  private var keys: [[UInt8]] = []
  private var values: [Value?] = []
  private var nextSlot = 0

  mutating func value(_ text: UnsafeRawBufferPointer, parse: (String) -> Value?) -> Value? {
    for index in keys.indices where keys[index].count == text.count {
      let same = keys[index].withUnsafeBytes { key in
        text.count == 0 || memcmp(key.baseAddress!, text.baseAddress!, text.count) == 0
      }
      if same { return values[index] }
    }
    let value = parse(String(decoding: text, as: UTF8.self))
    if keys.count < Self.capacity {
      keys.append(Array(text))
      values.append(value)
    } else {
      keys[nextSlot] = Array(text)
      values[nextSlot] = value
      nextSlot = (nextSlot + 1) % Self.capacity
    }
    return value
  }
}
