import Foundation
import XCTest

/// One block of a vector file in Vectors/: `name = …`, then `field = hex` lines. A field
/// given on several lines is their concatenation (long values as an RFC prints them).
struct VectorBlock {
  var name: String
  var fields: [String: [UInt8]] = [:]
  subscript(_ key: String) -> [UInt8] { fields[key] ?? [] }
}

/// Reads Vectors/NAME.txt: `#` comments, blank lines between blocks, each block opened by
/// its `name = …` line.
func loadVectorBlocks(_ resource: String) throws -> [VectorBlock] {
  let url = try XCTUnwrap(Bundle.module.url(forResource: resource, withExtension: "txt", subdirectory: "Vectors"))
  var blocks: [VectorBlock] = []
  for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
    guard let equals = line.firstIndex(of: "=") else { continue }
    let key = line[..<equals].trimmingCharacters(in: .whitespaces)
    let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    if key == "name" {
      blocks.append(VectorBlock(name: value))
    } else {
      guard !blocks.isEmpty else { throw HexError() }
      blocks[blocks.count - 1].fields[key, default: []] += try hex(value)
    }
  }
  return blocks
}
