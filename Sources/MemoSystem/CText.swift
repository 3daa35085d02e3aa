extension String {
  /// The text of a C buffer up to its first NUL (a filled-in `char[]`: a path template, an
  /// interface name, an error string), decoded as UTF-8.
  public init(nulTerminated buffer: [CChar]) {
    self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
