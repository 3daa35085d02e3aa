/// The page's files, embedded in the binary: no bundle to find at run time, nothing from a
/// CDN, no fonts, no analytics. Plain HTML, CSS and JavaScript written for memo-peer
/// (WebAssets+Page.swift, +Style.swift, +Script.swift).
public enum WebAssets {
  /// Served without a session: the sign-in pages use them, and they hold no memo data.
  static let publicPaths: Set<String> = ["/app.css", "/icon.svg"]

  /// The file at `path`, or nil.
  static func asset(at path: String) -> HTTPResponse? {
    switch path {
    case "/", "/index.html": page(200, indexPage)
    case "/app.js": file("text/javascript; charset=utf-8", script)
    case "/app.css": file("text/css; charset=utf-8", style)
    case "/icon.svg": file("image/svg+xml", icon)
    default: nil
    }
  }

  static func page(_ status: Int, _ html: String) -> HTTPResponse {
    HTTPResponse(
      status: status, headers: [HTTPField("Content-Type", "text/html; charset=utf-8")], body: Array(html.utf8))
  }

  static func file(_ type: String, _ text: String) -> HTTPResponse {
    HTTPResponse(status: 200, headers: [HTTPField("Content-Type", type)], body: Array(text.utf8))
  }

  /// A page for a browser that is not signed in.
  static let signInPage = simplePage(
    title: "Sign in to memo-peer",
    lines: [
      "This browser is not signed in.",
      "Open the one-time link that memo-peer web printed, or run memo-peer web --open on this computer.",
    ])

  /// A page for a sign-in link that was used already, or is from an earlier start.
  static let usedLinkPage = simplePage(
    title: "This sign-in link does not work",
    lines: [
      "Each link works once, and only while the memo-peer web that printed it runs.",
      "Run memo-peer web --open for a new one (memo-peer web prints it too).",
    ])

  static func simplePage(title: String, lines: [String]) -> String {
    """
    <!doctype html>
    <html lang="en">
    <head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
    <title>\(title)</title><link rel="stylesheet" href="/app.css"><link rel="icon" href="/icon.svg"></head>
    <body class="notice"><main><h1>\(title)</h1>\(lines.map { "<p>\($0)</p>" }.joined())</main></body>
    </html>

    """
  }

  static let icon = """
    <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="4" y="3" width="24" height="26" rx="3" \
    fill="#2f5d50"/><path d="M9 10h14M9 15h14M9 20h9" stroke="#f4f1ea" stroke-width="2.5" stroke-linecap="round"/></svg>

    """
}
