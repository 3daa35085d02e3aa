import MemoCore

/// Each remedy as the web page words it: what to do on the page, in the page's own names for
/// its views, or nothing when only a shell can do it (pairing, notebooks, the doctor, export
/// and import). The page never shows a command: its reader may not have a terminal at all.
public enum PageRemedyText {
  public static func words(_ remedy: Remedy) -> String? {
    switch remedy {
    case .listMemos(let includingTrash):
      includingTrash ? "the list shows the memos, the trash the deleted ones" : "the list shows the memos"
    case .typeMoreOfID: "type more of the id"
    case .listTrash(let days): "the trash shows the memos deleted in the last \(days) days"
    case .showHistory: "the memo's history shows the revisions kept here"
    case .listInbox: "the inbox shows the entries"
    case .dropInboxEntry: "drop it from the inbox"
    case .listConflicts: "the conflicts view shows the conflicts"
    case .resolveConflict: "keep A, B or both on the conflicts view"
    case .listInvitations: "the Devices view shows the invitations"
    case .copyToNewMemo: "copy its text into a new memo and delete this one"
    case .deleteMemo: "or delete it"
    case .listTrusted: "the Devices view shows the trusted devices"
    case .unlock(nil): "unlock it with the passphrase on the page"
    case .unlock(let device?): "unlock \(device), then sync again"
    case .relock: "lock the node, then unlock it again"
    case .retryPassphrase: "try again (the passphrase is the one the node's key was protected with)"
    case .grantConsent(.allServiceTypes), .askOrGrantConsent(.allServiceTypes): nil
    case .grantConsent(.network), .askOrGrantConsent(.network):
      "this network is not one memo-peer may use yet: allow it on the Network view if it is one of yours"
    case .grantConsent, .askOrGrantConsent: "answer the question the page shows when you press Sync"
    case .sync: "sync, then try again"
    case .syncAgain: "sync again; it resumes after the last batch stored"
    case .syncWithMember: "sync with a member first"
    case .checkPeerVisible(let device): "check that \(device) is on, on this network, and serving"
    case .settleHeldDeletes, .listOutbox, .listNotebooks, .showNotebook, .newNotebook, .renameNotebook,
      .moveNotebookMemos, .replaceNotebook, .protectKey, .debugLog, .recordConsentAgain, .keepDeleted, .pairAgain,
      .trustAgain, .pairWithName, .pairOnOtherDevice, .runDoctor, .checkStore, .moveMemosToNewNode,
      .restoreFromExport, .exportArchive:
      nil
    }
  }
}
