//! Key virtualisation and object references. An [`ObjRef`] names one interface of one domain
//! (Go!'s object reference); the [`KeyTable`] holds the domains and their interfaces, answers
//! an interface's type ([`KeyTable::get_type`]) and the key its domain holds
//! ([`KeyTable::sel2ref`]: the naming step from a reference to the key).
//!
//! With keys there are more domains than hardware keys, as Go! had more components than GDT
//! slots: the table maps a domain to a hardware key when it holds one. On a miss the
//! least-recently-used domain's key is taken back — its pages are re-tagged with the
//! *parking* key, which every PKRU denies — and the callee's pages are re-tagged with the
//! freed key (`pkey_mprotect`) before the switch. So every domain's memory is always under a
//! key no one else runs with: an access from outside faults with `SEGV_PKUERR` whether the
//! domain holds a key or not.
//!
//! In mprotect mode there are no slots to run out of: every domain is closed (`PROT_NONE`)
//! unless called, and every entry opens its region, so every look-up is a hit (a "miss"
//! would be the very re-protection each entry does anyway).

use super::{Domain, Pkey, Rights};
use std::io;

/// An interface's type (what [`KeyTable::get_type`] answers).
pub type TypeId = u32;

/// An object reference: a handle naming one interface of one domain in a [`KeyTable`]. It
/// carries the identity of the table that issued it, so a reference outlives its table only as
/// a refused one: a table answers `None` for a reference it did not issue (a destroyed table's,
/// another table's, or forged bits that name no interface of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjRef {
    table: u32,
    index: u32,
}

impl ObjRef {
    /// The reference as 64 bits (table identity high, interface index low), as it would cross
    /// a register or a message.
    pub fn to_bits(self) -> u64 {
        (u64::from(self.table) << 32) | u64::from(self.index)
    }

    /// A reference from 64 bits, as [`ObjRef::to_bits`] makes them: anyone can forge one, and a
    /// table accepts it only if it names one of that table's own interfaces.
    pub fn from_bits(bits: u64) -> ObjRef {
        ObjRef { table: (bits >> 32) as u32, index: bits as u32 }
    }
}

/// Identities of tables, never reused within a process (so a destroyed table's references
/// stay refused); 0 is never issued.
static TABLE_IDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// One interface: the domain it belongs to and its type (the table's entry per interface).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Interface {
    /// The domain's index in its table.
    pub domain: u32,
    /// Its type.
    pub type_id: TypeId,
}

/// Where [`KeyTable::sel2ref`] says a reference leads: the domain and the hardware key it
/// holds now (None: parked, the next entry misses; or mprotect mode, no keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The domain's index.
    pub domain: usize,
    /// Its hardware key, if it holds one.
    pub key: Option<u32>,
}

/// Domains sharing a few hardware keys (or none, in mprotect mode), and their interfaces.
#[derive(Debug)]
pub struct KeyTable {
    /// This table's identity, which its references carry.
    id: u32,
    // Field order: domains (registrations, mappings) go before the keys are freed.
    domains: Vec<Entry>,
    interfaces: Vec<Interface>,
    /// Which domain holds each hardware key.
    holder: Vec<Option<usize>>,
    keys: Vec<Pkey>,
    park: Option<Pkey>,
    how: Rights,
    clock: u64,
    misses: u64,
}

#[derive(Debug)]
struct Entry {
    domain: Domain,
    slot: Option<usize>,
    last_use: u64,
}

impl KeyTable {
    /// `domains` domains with private stacks whose rights `how` switches; with keys, sharing at
    /// most `max_keys` hardware keys (as many as can be allocated, one of them kept as the
    /// parking key), all starting parked.
    pub fn new(how: Rights, domains: usize, max_keys: usize) -> io::Result<KeyTable> {
        let mut t = KeyTable {
            id: TABLE_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            domains: Vec::new(),
            interfaces: Vec::new(),
            holder: Vec::new(),
            keys: Vec::new(),
            park: None,
            how,
            clock: 0,
            misses: 0,
        };
        if how == Rights::Pkey {
            let park = Pkey::alloc().map_err(|e| io::Error::new(e.kind(), format!("pkey_alloc (parking key): {e}")))?;
            while t.keys.len() < max_keys.saturating_sub(1) {
                match Pkey::alloc() {
                    Ok(k) => t.keys.push(k),
                    Err(_) if !t.keys.is_empty() => break,
                    Err(e) => return Err(io::Error::new(e.kind(), format!("pkey_alloc: {e}"))),
                }
            }
            t.holder = vec![None; t.keys.len()];
            t.park = Some(park);
        }
        for _ in 0..domains {
            let domain = match &t.park {
                Some(p) => Domain::with_key(p.id(), true)?,
                None => Domain::new(how, true)?,
            };
            t.domains.push(Entry { domain, slot: None, last_use: 0 });
        }
        Ok(t)
    }

    /// The bytes a table's own records take for `domains` domains, `interfaces` interfaces and
    /// `keys` hardware keys: one entry per domain (its `Domain` record, slot and age; not the
    /// domain's data page or stacks), one [`Interface`] per interface, and per key its holder
    /// and its `Pkey` — the heap a full table takes, its vectors at exactly that length. What
    /// does Go!'s GDT's job (size.domain counts it as the domain layer's data).
    pub fn record_bytes(domains: usize, interfaces: usize, keys: usize) -> usize {
        domains * std::mem::size_of::<Entry>()
            + interfaces * std::mem::size_of::<Interface>()
            + keys * (std::mem::size_of::<Option<usize>>() + std::mem::size_of::<Pkey>())
    }

    /// How the domains' rights switch.
    pub fn how(&self) -> Rights {
        self.how
    }

    /// Hardware keys the domains share (the parking key not counted; 0 in mprotect mode).
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// The domains.
    pub fn len(&self) -> usize {
        self.domains.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    /// Misses so far.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// The parking key (keys only).
    pub fn park_key(&self) -> Option<u32> {
        self.park.as_ref().map(Pkey::id)
    }

    /// The domain `d` (with keys, its key may be the parking key).
    ///
    /// # Panics
    /// If there is no domain `d` (an index, as a slice's); [`KeyTable::resolve`] refuses instead.
    pub fn domain(&self, d: usize) -> &Domain {
        &self.domains[d].domain
    }

    /// Adds an interface of type `type_id` to domain `d`; `None` if there is no such domain.
    pub fn add_interface(&mut self, d: usize, type_id: TypeId) -> Option<ObjRef> {
        let id = u32::try_from(self.interfaces.len()).ok()?;
        (d < self.domains.len()).then(|| {
            self.interfaces.push(Interface { domain: d as u32, type_id });
            ObjRef { table: self.id, index: id }
        })
    }

    /// The interface `r` names, if this table issued it.
    #[inline(always)]
    fn interface(&self, r: ObjRef) -> Option<&Interface> {
        if r.table != self.id {
            return None;
        }
        self.interfaces.get(r.index as usize)
    }

    /// The type of the interface `r` names (Go!'s `get_type`); `None` for a reference this
    /// table did not issue (stale, another table's, forged).
    #[inline]
    pub fn get_type(&self, r: ObjRef) -> Option<TypeId> {
        self.interface(r).map(|i| i.type_id)
    }

    /// The naming step from a reference to the key: the domain `r` leads to and the
    /// hardware key it holds now (Go!'s `sel2ref`, selector to reference, here reference to
    /// key). `None` for a reference this table did not issue.
    #[inline]
    pub fn sel2ref(&self, r: ObjRef) -> Option<Binding> {
        let i = self.interface(r)?;
        let domain = i.domain as usize;
        let key = self.domains[domain].slot.map(|s| self.keys[s].id());
        Some(Binding { domain, key })
    }

    /// Makes domain `d` enterable (with keys: holding a hardware key, by a hit or a miss that
    /// evicts the least recently used holder) and returns it; `Err` if there is no domain `d`.
    #[inline]
    pub fn resolve(&mut self, d: usize) -> io::Result<&Domain> {
        if d >= self.domains.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no domain {d} in a table of {}", self.domains.len()),
            ));
        }
        self.clock += 1;
        if self.how == Rights::Pkey && self.domains[d].slot.is_none() {
            self.miss(d)?;
        }
        let e = &mut self.domains[d];
        e.last_use = self.clock;
        Ok(&e.domain)
    }

    #[cold]
    fn miss(&mut self, d: usize) -> io::Result<()> {
        self.misses += 1;
        let park = self.park.as_ref().map(Pkey::id).ok_or_else(|| io::Error::other("no parking key"))?;
        let slot = match self.holder.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                let (slot, victim) = self
                    .holder
                    .iter()
                    .enumerate()
                    .filter_map(|(s, h)| h.map(|v| (s, v)))
                    .min_by_key(|&(_, v)| self.domains[v].last_use)
                    .ok_or_else(|| io::Error::other("the key table has no hardware key"))?;
                self.domains[victim].domain.retag(park)?;
                self.domains[victim].slot = None;
                self.holder[slot] = None;
                slot
            }
        };
        self.domains[d].domain.retag(self.keys[slot].id())?;
        self.domains[d].slot = Some(slot);
        self.holder[slot] = Some(d);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library_calls::Roaming;

    /// Found by the error test (`osprim errortest`): a reference outlived its table and named
    /// whatever the next table put at its index, and an unknown domain index panicked.
    #[test]
    fn references_of_a_destroyed_table_and_forged_ones_are_refused() {
        let _s = sys::testing::serial();
        let how = Rights::here()[0];
        let mut old = KeyTable::new(how, 1, 3).expect("table");
        let stale = old.add_interface(0, 7).expect("interface");
        assert_eq!(old.get_type(stale), Some(7));
        drop(old);
        let mut new = KeyTable::new(how, 2, 3).expect("table");
        let live = new.add_interface(1, 9).expect("interface");
        assert_eq!(stale.to_bits() as u32, live.to_bits() as u32, "the same index in both tables");
        assert_eq!((new.get_type(stale), new.sel2ref(stale)), (None, None), "a destroyed table's reference");
        assert_eq!(new.get_type(live), Some(9));
        assert_eq!(new.sel2ref(live).map(|b| b.domain), Some(1));
        assert_eq!(ObjRef::from_bits(live.to_bits()), live);
        for bits in
            [0, u64::MAX, live.to_bits() + 1, live.to_bits() ^ (1 << 40), (live.to_bits() >> 32) << 32 | 0xffff_ffff]
        {
            assert_eq!(new.get_type(ObjRef::from_bits(bits)), None, "forged {bits:#x}");
            assert_eq!(new.sel2ref(ObjRef::from_bits(bits)), None, "forged {bits:#x}");
        }
    }

    #[test]
    fn an_unknown_domain_index_is_refused_not_a_panic() {
        let _s = sys::testing::serial();
        let how = Rights::here()[0];
        let mut t = KeyTable::new(how, 2, 3).expect("table");
        for d in [2, 3, usize::MAX] {
            assert_eq!(t.resolve(d).map(|_| ()).unwrap_err().kind(), io::ErrorKind::InvalidInput);
            assert!(t.xfer_stamped(d, &mut Roaming::new(None), 1).is_err());
        }
        assert!(t.resolve(1).is_ok());
    }
}
