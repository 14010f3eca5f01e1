//! Key virtualisation: more domains than hardware keys, as Go! had more components than GDT
//! slots. An [`ObjRef`] names a domain; the [`KeyTable`] maps it to a hardware key when it
//! holds one. On a miss the least-recently-used domain's key is taken back — its pages are
//! re-tagged with the *parking* key, which every PKRU denies — and the callee's pages are
//! re-tagged with the freed key (`pkey_mprotect`) before the switch. So every domain's memory
//! is always under a key no one else runs with: an access from outside faults with
//! `SEGV_PKUERR` whether the domain holds a key or not.

use super::{Domain, Pkey};
use std::io;

/// A domain's name in a [`KeyTable`].
pub type ObjRef = usize;

/// Domains sharing a few hardware keys.
#[derive(Debug)]
pub struct KeyTable {
    // Field order: domains (registrations, mappings) go before the keys are freed.
    domains: Vec<Entry>,
    /// Which domain holds each hardware key.
    holder: Vec<Option<ObjRef>>,
    keys: Vec<Pkey>,
    park: Pkey,
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
    /// `domains` domains with private stacks, sharing at most `max_keys` hardware keys (as many
    /// as can be allocated, one of them kept as the parking key). All start parked.
    pub fn new(domains: usize, max_keys: usize) -> io::Result<KeyTable> {
        let park = Pkey::alloc().map_err(|e| io::Error::new(e.kind(), format!("pkey_alloc (parking key): {e}")))?;
        let mut keys = Vec::new();
        while keys.len() < max_keys.saturating_sub(1) {
            match Pkey::alloc() {
                Ok(k) => keys.push(k),
                Err(_) if !keys.is_empty() => break,
                Err(e) => return Err(io::Error::new(e.kind(), format!("pkey_alloc: {e}"))),
            }
        }
        let mut t = KeyTable { domains: Vec::new(), holder: vec![None; keys.len()], keys, park, clock: 0, misses: 0 };
        for _ in 0..domains {
            let domain = Domain::with_key(t.park.id(), true)?;
            t.domains.push(Entry { domain, slot: None, last_use: 0 });
        }
        Ok(t)
    }

    /// Hardware keys the domains share (the parking key not counted).
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

    /// The parking key.
    pub fn park_key(&self) -> u32 {
        self.park.id()
    }

    /// The domain `obj` (its key may be the parking key).
    pub fn domain(&self, obj: ObjRef) -> &Domain {
        &self.domains[obj].domain
    }

    /// Makes `obj` hold a hardware key (a hit, or a miss that evicts the least recently used
    /// holder) and returns its domain, ready to be entered.
    #[inline]
    pub fn resolve(&mut self, obj: ObjRef) -> io::Result<&Domain> {
        self.clock += 1;
        if self.domains[obj].slot.is_none() {
            self.miss(obj)?;
        }
        let e = &mut self.domains[obj];
        e.last_use = self.clock;
        Ok(&e.domain)
    }

    #[cold]
    fn miss(&mut self, obj: ObjRef) -> io::Result<()> {
        self.misses += 1;
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
                self.domains[victim].domain.retag(self.park.id())?;
                self.domains[victim].slot = None;
                self.holder[slot] = None;
                slot
            }
        };
        self.domains[obj].domain.retag(self.keys[slot].id())?;
        self.domains[obj].slot = Some(slot);
        self.holder[slot] = Some(obj);
        Ok(())
    }
}
