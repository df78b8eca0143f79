//! The ways into a file, by name: the names `info` gives a slot's stanzas ([`stanza_names`]),
//! what `rekey --remove` names them by ([`StanzaSelector`], [`select`]), and the rekey that
//! keeps every stanza it does not remove, byte for byte, and adds new ones
//! ([`Opened::edit_with`]). docs/FORMAT.md, "Naming stanzas".

use std::str::FromStr;

use super::info::Access;
use super::stanza::{kind_labels, Stanza, StanzaKind};
use super::{stanza, ContainerError, NewStanzas, Opened, Rekey, RekeyWay, MAX_STANZAS};

/// The name of each of one slot's stanzas, in order: its [`StanzaKind::label`], followed by
/// `#N` (its place in the slot, from 1) where another stanza of the slot has the same label
/// ("key-file", "x25519#2", "x25519#3", "ssh-ed25519:1a2b3c4d").
pub fn stanza_names(kinds: &[StanzaKind]) -> Vec<String> {
    let labels: Vec<String> = kinds.iter().map(StanzaKind::label).collect();
    labels
        .iter()
        .enumerate()
        .map(|(place, label)| {
            if labels.iter().filter(|other| *other == label).count() > 1 {
                format!("{label}#{}", place + 1)
            } else {
                label.clone()
            }
        })
        .collect()
}

/// A stanza named as `info` names it, or by less: `KIND[:TAG][#N]`. KIND is a kind's label
/// ("key-file", "passphrase", "x25519", ...) or `kind-N` for a kind byte this paraes does not
/// know; TAG an SSH stanza's key tag (8 hex digits); N the stanza's place in its slot, from 1.
/// It names the stanzas that agree with every part it gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StanzaSelector {
    text: String,
    kind: String,
    tag: Option<String>,
    place: Option<usize>,
}

impl FromStr for StanzaSelector {
    /// What is wrong with the text, and what to give instead.
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (rest, place) = match text.rsplit_once('#') {
            Some((rest, number)) => (
                rest,
                Some(
                    number
                        .parse::<usize>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| {
                            format!(
                                "\"{text}\": the number after # is the stanza's place in its slot, from 1, as `paraes info` shows it"
                            )
                        })?,
                ),
            ),
            None => (text, None),
        };
        let (kind, tag) = match rest.split_once(':') {
            Some((kind, tag)) => (kind, Some(tag.to_ascii_lowercase())),
            None => (rest, None),
        };
        let kind = kind.to_ascii_lowercase();
        let labels = kind_labels();
        let unknown_byte = kind
            .strip_prefix("kind-")
            .is_some_and(|byte| byte.parse::<u8>().is_ok());
        if !labels.contains(&kind.as_str()) && !unknown_byte {
            return Err(format!(
                "\"{text}\" names no stanza kind: give one of {} (or kind-N), as `paraes info` names the stanzas",
                labels.join(", ")
            ));
        }
        if let Some(tag) = &tag {
            if tag.len() != 8 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "\"{text}\": an SSH key tag is 8 hex digits, as `paraes info` shows it (ssh-ed25519:1a2b3c4d)"
                ));
            }
        }
        Ok(StanzaSelector {
            text: text.to_owned(),
            kind,
            tag,
            place,
        })
    }
}

impl std::fmt::Display for StanzaSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl StanzaSelector {
    /// Whether it names `kind`, the stanza at `place` (from 0) of its slot.
    fn names(&self, place: usize, kind: &StanzaKind) -> bool {
        let label = kind.label();
        let (word, tag) = match label.split_once(':') {
            Some((word, tag)) => (word, Some(tag)),
            None => (label.as_str(), None),
        };
        word == self.kind
            && self.tag.as_deref().is_none_or(|want| tag == Some(want))
            && self.place.is_none_or(|want| want == place + 1)
    }
}

/// The places (from 0) of the stanzas of one slot, `kinds`, that `selectors` name: each
/// selector must name exactly one stanza (none: nothing to remove; several: the selector must
/// say which, with `#N`). In slot order, each place once.
pub fn select(
    kinds: &[StanzaKind],
    selectors: &[StanzaSelector],
) -> Result<Vec<usize>, ContainerError> {
    let names = stanza_names(kinds);
    let mut places = Vec::new();
    for selector in selectors {
        let named: Vec<usize> = (0..kinds.len())
            .filter(|&place| selector.names(place, &kinds[place]))
            .collect();
        match named.as_slice() {
            [place] => places.push(*place),
            [] => {
                return Err(ContainerError::BadStanzaChange(format!(
                    "no stanza of the file is \"{selector}\" (its stanzas: {}; `paraes info` names them)",
                    names.join(", ")
                )))
            }
            several => {
                return Err(ContainerError::BadStanzaChange(format!(
                    "\"{selector}\" names {} stanzas ({}): name one, as `paraes info` does",
                    several.len(),
                    several
                        .iter()
                        .map(|&place| names[place].as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    }
    places.sort_unstable();
    places.dedup();
    Ok(places)
}

impl Opened {
    /// What the stanzas of the slot that opened the file are, in order.
    pub fn stanza_kinds(&self) -> Result<Vec<StanzaKind>, ContainerError> {
        self.stanzas.iter().map(Stanza::kind).collect()
    }

    /// The place (from 0) of the stanza that opened the file among
    /// [`Opened::stanza_kinds`]; `None` for a container sealed here, or opened with its secret.
    pub fn opened_by(&self) -> Option<usize> {
        self.opener.map(|opener| opener.stanza)
    }

    /// The place among the [`Unlock`](super::Unlock)'s identities of the one that opened the
    /// file; `None` as for [`Opened::opened_by`].
    pub fn opening_identity(&self) -> Option<usize> {
        self.opener.map(|opener| opener.identity)
    }

    /// A rekey that keeps the stanzas of the slot that opened the file, byte for byte, except
    /// those at `remove` (places, from 0), and adds the stanzas of `add` after them, written the
    /// way `way` says. Refuses a result with no stanza (no way in), more than [`MAX_STANZAS`],
    /// two passphrases, or one key named too often, and a file whose two slots both open with
    /// its key (a rekey that did not finish: which set to keep is for a rekey that replaces
    /// every stanza to say). Whether the stanza that opened the file may go is the caller's
    /// rule ([`Opened::opened_by`]).
    pub fn edit_with(
        &self,
        remove: &[usize],
        add: Option<&NewStanzas>,
        way: RekeyWay,
    ) -> Result<Rekey, ContainerError> {
        self.check_rekeyable()?;
        let refuse = |why: String| Err(ContainerError::BadStanzaChange(why));
        if matches!(&self.info.access, Access::Slots { slots, .. } if slots.len() > 1) {
            return refuse(
                "both stanza slots open with this file's key (a rekey did not finish): finish it with a rekey that replaces every stanza, then add or remove".into(),
            );
        }
        if let Some(place) = remove.iter().find(|place| **place >= self.stanzas.len()) {
            return refuse(format!(
                "the file has {} stanzas, not a stanza {}",
                self.stanzas.len(),
                place + 1
            ));
        }
        let mut stanzas: Vec<Stanza> = self
            .stanzas
            .iter()
            .enumerate()
            .filter(|(place, _)| !remove.contains(place))
            .map(|(_, stanza)| stanza.clone())
            .collect();
        if let Some(add) = add {
            stanzas.extend(add.seal(&self.secret)?);
        }
        if stanzas.is_empty() {
            return refuse(
                "that removes every stanza, and then nothing could open the file: add a way in, or remove fewer".into(),
            );
        }
        if stanzas.len() > MAX_STANZAS {
            return refuse(format!(
                "that makes {} stanzas: a container holds at most {MAX_STANZAS}",
                stanzas.len()
            ));
        }
        if stanzas.iter().filter(|s| s.argon2().is_some()).count() > 1 {
            return refuse(
                "the file has a passphrase stanza already, and a container holds one: remove that stanza (named passphrase) in the same rekey to change the passphrase".into(),
            );
        }
        if stanza::names_a_key_too_often(&stanzas) {
            return refuse(format!(
                "that names one SSH key more than {} times: give it once",
                stanza::MAX_SAME_TAG
            ));
        }
        self.rekey_to(stanzas, way)
    }
}
