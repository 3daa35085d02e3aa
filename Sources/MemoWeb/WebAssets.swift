/// The page's files, embedded in the binary: no bundle to find at run time, nothing from a
/// CDN, no fonts, no analytics. They are plain files in Sources/MemoWeb/Assets — HTML, CSS
/// and JavaScript written for memo-peer, edited and linted (`make lint` runs eslint on the
/// script) as what they are.
///
/// SwiftPM compiles each file into the MemoWeb module at build time (`resources:
/// [.embedInCode("Assets")]` in Package.swift) as a static byte array of a generated
/// `PackageResources` struct, named after the file with every character an identifier cannot
/// hold (`.`, `-`) as `_`: Assets/app.js is `PackageResources.app_js`. Only the file's name
/// counts, not its folder, so keep Assets flat; a file there that nothing below uses is
/// still compiled in (WebAssetsTests checks that none is left over).
///
/// This is the one place that maps paths to files and gives each its media type. No Swift
/// source holds a page, a script or a style sheet of its own (WebAssetsTests looks).
public enum WebAssets {
  /// Served without a session: the sign-in notices use them, and they hold no memo data.
  static let publicPaths: Set<String> = ["/app.css", "/icon.svg"]

  /// The file at `path`, or nil.
  static func asset(at path: String) -> HTTPResponse? {
    switch path {
    // The page's skeleton; app.js fills `#content`. No inline script or style anywhere (the
    // Content-Security-Policy would refuse them).
    case "/", "/index.html": response(200, html, PackageResources.index_html)
    // The page's script. Memo text only ever reaches the page through `textContent` (never
    // markup), is removed from the page whenever the window is hidden or loses focus (the
    // privacy screen), and is never written to storage: no localStorage, no cookies of its
    // own, no service worker. Local-network consent is asked only when the person presses
    // Sync (or Allow under Network), with the usage text the terminal shows.
    case "/app.js": response(200, "text/javascript; charset=utf-8", PackageResources.app_js)
    // The page's style: the system's own fonts, no images but the icon.
    case "/app.css": response(200, "text/css; charset=utf-8", PackageResources.app_css)
    case "/icon.svg": response(200, "image/svg+xml", PackageResources.icon_svg)
    default: nil
    }
  }

  /// The answer to a page request from a browser that is not signed in.
  static let signInNotice = response(401, html, PackageResources.sign_in_html)

  /// The answer to a sign-in link that was used already, or is from an earlier start.
  static let usedLinkNotice = response(403, html, PackageResources.used_link_html)

  /// The page `memo-peer web --open` hands to the browser (a file, never served): it sends
  /// the browser on to `link` at once, so the sign-in link stays out of every process's
  /// arguments (docs/WEB.md). Assets/open.html has `{{link}}` where the link goes; a
  /// sign-in link (letters, digits and `:/.?=[]-_`) needs no escaping, anything else is
  /// escaped for an attribute all the same.
  public static func launcher(for link: String) -> [UInt8] {
    var escaped = ""
    for character in link {
      switch character {
      case "&": escaped += "&amp;"
      case "\"": escaped += "&quot;"
      case "'": escaped += "&#39;"
      case "<": escaped += "&lt;"
      case ">": escaped += "&gt;"
      default: escaped.append(character)
      }
    }
    return Array(String(decoding: PackageResources.open_html, as: UTF8.self).replacing("{{link}}", with: escaped).utf8)
  }

  /// The script, style sheet and page as text, for the checks that read them.
  static var script: String { String(decoding: PackageResources.app_js, as: UTF8.self) }
  static var style: String { String(decoding: PackageResources.app_css, as: UTF8.self) }
  static var indexPage: String { String(decoding: PackageResources.index_html, as: UTF8.self) }

  private static let html = "text/html; charset=utf-8"

  private static func response(_ status: Int, _ type: String, _ bytes: [UInt8]) -> HTTPResponse {
    HTTPResponse(status: status, headers: [HTTPField("Content-Type", type)], body: bytes)
  }
}
