//! What a rekey does to a file's stanzas, decided once the file is open: the stanzas that
//! `--remove` names found, the stanza that opened the file kept unless `--force`, and the one
//! line that says which ways in went. docs/FORMAT.md, "Naming stanzas".

use anyhow::{bail, Result};
use paraes_core::container::{
    select, stanza_names, NewStanzas, Opened, Recipient, Rekey, RekeyWay, Unlock,
};

use crate::plan::RekeyChange;

/// The rekey of `opened` that `change` asks for (`new`: the prepared stanzas for
/// `recipients`, if any), and one line that says which ways in it removes or drops. Refuses,
/// before anything is written, to drop or remove the stanza that opened the file unless
/// `force`.
pub fn plan(
    opened: &Opened,
    unlock: &Unlock,
    change: &RekeyChange,
    new: Option<&NewStanzas>,
    recipients: &[Recipient],
    force: bool,
    way: RekeyWay,
) -> Result<(Rekey, String)> {
    let kinds = opened.stanza_kinds()?;
    let names = stanza_names(&kinds);
    let opener = opened.opened_by();
    let opener_name = opener.and_then(|place| names.get(place)).cloned();
    match change {
        RekeyChange::Replace(_) => {
            // The way in survives if its key is among the new stanzas' (a key file given
            // again, the same passphrase, the same public key).
            let kept = opened
                .opening_identity()
                .and_then(|place| unlock.identities.get(place))
                .is_some_and(|identity| recipients.iter().any(|r| identity.is_for(r)));
            if let (Some(name), false, false) = (&opener_name, kept, force) {
                bail!(
                    "replacing every stanza would drop {name}, the stanza that opened the file, and the key you gave would no longer open it: give that key among the new ones too, add ways in with --add-* (the others are kept), or give --force"
                );
            }
            let new = new.ok_or_else(|| anyhow::anyhow!("no new stanzas to replace with"))?;
            let rekey = opened.rekey_with(new, way)?;
            let dropped: Vec<String> = names
                .iter()
                .enumerate()
                .map(|(place, name)| match (Some(place) == opener, kept) {
                    (true, true) => format!(
                        "{name} (it opened the file; its key is among the new stanzas, so it still does)"
                    ),
                    (true, false) => format!("{name} (it opened the file)"),
                    (false, _) => name.clone(),
                })
                .collect();
            let line = format!(
                "replaced every stanza: dropped {}; wrote {} new",
                dropped.join(", "),
                stanzas(recipients.len())
            );
            Ok((rekey, line))
        }
        RekeyChange::Edit { remove, .. } => {
            let places = select(&kinds, remove)?;
            if let (Some(name), false) = (&opener_name, force) {
                if opener.is_some_and(|place| places.contains(&place)) {
                    bail!(
                        "{name} is the stanza that opened the file: removing it locks out the key you gave; give --force to remove it anyway (another way in must remain)"
                    );
                }
            }
            let rekey = opened.edit_with(&places, new, way)?;
            let removed: Vec<&str> = places.iter().map(|&p| names[p].as_str()).collect();
            let mut said = Vec::new();
            if !removed.is_empty() {
                said.push(format!("removed {}", removed.join(", ")));
            }
            if !recipients.is_empty() {
                said.push(format!("added {}", stanzas(recipients.len())));
            }
            said.push(format!(
                "kept {} as they were (paraes info names them)",
                stanzas(names.len() - places.len())
            ));
            Ok((rekey, said.join("; ")))
        }
    }
}

/// "1 stanza", "2 stanzas".
fn stanzas(count: usize) -> String {
    format!("{count} stanza{}", if count == 1 { "" } else { "s" })
}
