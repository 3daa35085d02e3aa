import CYAML

/// libyaml's event parser (the parser API: yaml_parser_initialize, set_input_string, parse,
/// yaml_event_delete, yaml_parser_delete), owned here and nowhere else: every C pointer is
/// made, read and freed in this file, and what leaves it is a Swift value (`YAMLEvent`) or
/// a `YAMLProblem`. libyaml reads YAML 1.1 fully and correctly (escapes such as `\_`, folded
/// and block scalars, CRLF), which a hand-written subset reader did not.
///
/// Not thread-safe and not shared: one parser reads one piece of text, then is dropped.
final class YAMLEventParser {
  private let parser: UnsafeMutablePointer<yaml_parser_t>
  /// libyaml keeps a pointer to its input for the parser's whole life: a copy owned here.
  private let input: UnsafeMutableBufferPointer<UInt8>
  private var finished = false

  init(_ text: String) {
    let bytes = Array(text.utf8)
    input = .allocate(capacity: max(1, bytes.count))
    _ = input.initialize(from: bytes)
    parser = .allocate(capacity: 1)
    // yaml_parser_initialize only fails when malloc does; libyaml then leaves `error` set,
    // and the first `next()` reports it as a problem rather than crashing.
    if yaml_parser_initialize(parser) == 0 {
      finished = true
    } else {
      yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
    }
  }

  deinit {
    yaml_parser_delete(parser)
    parser.deallocate()
    input.deallocate()
  }

  /// The next event; after `.streamEnd` or a problem, every call is a problem.
  func next() throws(YAMLProblem) -> YAMLEvent {
    guard !finished else { throw YAMLProblem(line: 1, reason: "the YAML parser could not start") }
    var event = yaml_event_t()
    guard yaml_parser_parse(parser, &event) != 0 else {
      finished = true
      // libyaml's problem texts are constant strings of its own ("found unknown escape
      // character while parsing a quoted scalar"): they never quote the input.
      let problem = parser.pointee.problem.map { String(cString: $0) } ?? "not valid YAML"
      throw YAMLProblem(line: Int(parser.pointee.problem_mark.line) + 1, reason: problem)
    }
    defer { yaml_event_delete(&event) }
    let line = Int(event.start_mark.line) + 1
    switch event.type {
    case YAML_STREAM_START_EVENT: return .streamStart
    case YAML_STREAM_END_EVENT:
      finished = true
      return .streamEnd
    case YAML_DOCUMENT_START_EVENT: return .documentStart
    case YAML_DOCUMENT_END_EVENT: return .documentEnd
    case YAML_ALIAS_EVENT: return .alias(line: line)
    case YAML_SCALAR_EVENT:
      let scalar = event.data.scalar
      let value =
        scalar.value.map { String(decoding: UnsafeBufferPointer(start: $0, count: scalar.length), as: UTF8.self) }
        ?? ""
      return .scalar(
        value, line: line, plain: scalar.style == YAML_PLAIN_SCALAR_STYLE,
        marks: YAMLEvent.Marks(anchor: scalar.anchor != nil, tag: scalar.tag != nil))
    case YAML_SEQUENCE_START_EVENT:
      let start = event.data.sequence_start
      return .sequenceStart(line: line, marks: YAMLEvent.Marks(anchor: start.anchor != nil, tag: start.tag != nil))
    case YAML_SEQUENCE_END_EVENT: return .sequenceEnd
    case YAML_MAPPING_START_EVENT:
      let start = event.data.mapping_start
      return .mappingStart(line: line, marks: YAMLEvent.Marks(anchor: start.anchor != nil, tag: start.tag != nil))
    case YAML_MAPPING_END_EVENT: return .mappingEnd
    default:
      finished = true
      throw YAMLProblem(line: line, reason: "not valid YAML")
    }
  }
}

/// One libyaml event as a Swift value: no pointer into the parser survives it.
enum YAMLEvent: Equatable {
  /// Whether a node carried an anchor (`&name`) or an explicit tag (`!tag`).
  struct Marks: Equatable {
    var anchor: Bool
    var tag: Bool
  }

  case streamStart, streamEnd, documentStart, documentEnd
  /// `plain`: written without quotes and not as a block scalar (so `~` or nothing is null).
  case scalar(String, line: Int, plain: Bool, marks: Marks)
  case sequenceStart(line: Int, marks: Marks)
  case sequenceEnd
  case mappingStart(line: Int, marks: Marks)
  case mappingEnd
  case alias(line: Int)
}

/// Why YAML text was refused: the line (1 is the text's first) and a reason that never
/// quotes the text.
struct YAMLProblem: Error, Equatable {
  let line: Int
  let reason: String
}
