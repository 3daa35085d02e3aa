/// A path's parts as text, as NSString's path methods gave them (FoundationEssentials has no
/// NSString): `/a/b/` → parent `/a`, last component `b`; `x.md` → extension `md`. Only text:
/// nothing here touches the file system or follows a link.
public enum PathText {
  /// The path without its last component: `/a/b` → `/a`, `/a` → `/`, `b` → empty.
  public static func parent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    guard trimmed != "/", let slash = trimmed.lastIndex(of: "/") else { return trimmed == "/" ? "/" : "" }
    let head = withoutTrailingSlashes(String(trimmed[..<slash]))
    return head.isEmpty ? "/" : head
  }

  /// The last component: `/a/b/` → `b`, `/` → `/`.
  public static func lastComponent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    guard trimmed != "/" else { return "/" }
    return trimmed.split(separator: "/").last.map(String.init) ?? ""
  }

  /// The last component's extension, without the dot: `notes/x.md` → `md`; none for `.md` or `x`.
  public static func pathExtension(_ path: String) -> String {
    let name = lastComponent(path)
    guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
    return String(name[name.index(after: dot)...])
  }

  private static func withoutTrailingSlashes(_ path: String) -> String {
    var text = Substring(path)
    while text.count > 1 && text.hasSuffix("/") { text = text.dropLast() }
    return String(text)
  }
}
