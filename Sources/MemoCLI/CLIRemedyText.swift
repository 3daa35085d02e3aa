import MemoCore

/// Each remedy as the command line words it: the command to type, as docs/CLI.md shows it.
/// The errors below the application layer carry the remedy as a fact (`Remedy`); this is the
/// one place that turns it into `memo-peer` commands, so the page never has to strip them.
enum CLIRemedyText {
  /// The `hint:` line of `error` on the command line (and `hint` in `--json` errors).
  static func hint(_ error: MemoPeerError) -> String? {
    error.hint(wording: words)
  }

  static func words(_ remedy: Remedy) -> String {
    switch remedy {
    case .listMemos(let includingTrash):
      includingTrash
        ? "`memo-peer list` shows the ids, `memo-peer trash` the deleted ones" : "`memo-peer list` shows the ids"
    case .typeMoreOfID: "type more of the id (`memo-peer list` shows 8)"
    case .listTrash(let days): "`memo-peer trash` lists the deleted memos of the last \(days) days"
    case .showHistory(let memo): "`memo-peer history \(memo)` lists the revisions kept here"
    case .settleHeldDeletes: "`memo-peer sync status` says how to settle held deletes"
    case .listOutbox: "`memo-peer outbox` lists the entries"
    case .listInbox: "`memo-peer inbox` lists the entries"
    case .dropInboxEntry(let entry): "`memo-peer inbox drop \(entry)` removes it"
    case .listConflicts: "`memo-peer conflicts` lists the conflicts and the copies' ids"
    case .resolveConflict(let memo): "`memo-peer conflicts resolve \(memo) --keep A|B|both` settles it"
    case .listNotebooks: "`memo-peer notebook list` shows the notebooks"
    case .showNotebook(let name): "`memo-peer notebook show \(name ?? "NAME")` lists whom it is shared with"
    case .listInvitations: "`memo-peer notebook invitations` lists them"
    case .newNotebook(let example): "for example `memo-peer notebook new \(example)`"
    case .renameNotebook: "rename it instead (`memo-peer notebook rename`)"
    case .moveNotebookMemos(let from): "move them first: `memo-peer notebook delete \(from) --move-to OTHER`"
    case .replaceNotebook(let name):
      "make a new notebook and move the memos into it: `memo-peer notebook new NAME`, "
        + "`memo-peer notebook delete \(name) --move-to NAME` (make NAME the default first if this one is), "
        + "then share NAME"
    case .copyToNewMemo: "copy its text into a new memo (`memo-peer new`) and delete this one"
    case .deleteMemo(let memo): "or delete it with `memo-peer delete \(memo)`"
    case .listTrusted: "`memo-peer trust list` shows the trusted peers"
    case .unlock(nil): "run `memo-peer unlock`"
    case .unlock(let device?): "run `memo-peer unlock` on \(device), then sync again"
    case .relock: "run `memo-peer lock`, then `memo-peer unlock` again"
    case .protectKey: "protect it with `memo-peer protect after-first-unlock` or `memo-peer protect complete`"
    case .retryPassphrase: "try again (the passphrase is the one given to `memo-peer protect`)"
    case .debugLog: "see `memo-peer --debug` for the system call that failed"
    case .grantConsent(nil): "grant local-network consent with `memo-peer consent grant`"
    case .grantConsent(.network?): "allow this network with `memo-peer network allow` if it is one of yours"
    case .askOrGrantConsent(.network):
      "run `memo-peer browse` on a terminal to be asked, or `memo-peer network allow` if this network is one of yours"
    case .grantConsent(let scope?): "grant it with `memo-peer consent grant --scope \(scope.rawValue)`"
    case .askOrGrantConsent(let scope):
      "run it on a terminal to be asked, or grant it with `memo-peer consent grant --scope \(scope.rawValue)`"
    case .recordConsentAgain: "move it aside and record your decision again with `memo-peer consent grant` or `deny`"
    case .sync: "`memo-peer sync`, then try again"
    case .syncAgain: "run `memo-peer sync` again; it resumes after the last batch stored"
    case .syncWithMember: "sync with a member first (`memo-peer sync`)"
    case .keepDeleted(let device):
      "`memo-peer sync --peer \(device ?? "PEER") --keep-deleted` drops what is held from that device"
    case .pairAgain(nil): "if that was a mistake, pair the two devices again (`memo-peer pair`)"
    case .pairAgain(let device?):
      "pair again (`memo-peer pair`), or add this device on \(device) with `memo-peer trust add`"
    case .trustAgain: "if that was a mistake, trust it again (`memo-peer trust add` or `memo-peer pair`), then sync"
    case .pairWithName: "choose another name there with `memo-peer pair --name NAME`"
    case .pairOnOtherDevice: "run `memo-peer pair` on the other device while this window is open"
    case .checkPeerVisible(let device):
      "check that memo-peer serve runs on \(device) with consent; `memo-peer browse` shows who is visible"
    case .runDoctor(nil): "run `memo-peer doctor`"
    case .runDoctor(let device?): "`memo-peer doctor` on \(device) tells what is wrong there"
    case .checkStore: "`memo-peer doctor` checks the store"
    case .moveMemosToNewNode: "move the memos to a new node with `memo-peer export` and `memo-peer import`"
    case .restoreFromExport: "move it aside and restore from an export with `memo-peer import`"
    case .exportArchive: "export one with `memo-peer export`"
    }
  }
}
