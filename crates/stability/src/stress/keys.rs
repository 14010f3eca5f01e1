//! Protection keys shared by the workers (keys mode only): the hardware has 15, the test has
//! up to 10,000 domains, so the keys thrash as Go!'s descriptor table did. A worker leases
//! keys from the pool for the domains of a chain and gives them back; a domain without a key
//! carries the *parking* key, which no thread's PKRU grants. Only the owning worker re-tags
//! its domains, and a domain holds a key only while its owner holds the lease.

use domain::{Domain, Pkey};
use std::sync::Mutex;

/// The free hardware keys and the parking key.
pub struct KeyPool {
    free: Mutex<Vec<Pkey>>,
    park: Pkey,
    total: usize,
}

impl KeyPool {
    /// The parking key and every other key the process can allocate (at most 15).
    pub fn new() -> std::io::Result<KeyPool> {
        let park = Pkey::alloc()?;
        let mut free = Vec::new();
        while free.len() < 15 {
            match Pkey::alloc() {
                Ok(k) => free.push(k),
                Err(_) => break,
            }
        }
        let total = free.len();
        Ok(KeyPool { free: Mutex::new(free), park, total })
    }

    /// The parking key's number.
    pub fn park(&self) -> u32 {
        self.park.id()
    }

    /// The hardware keys the pool shares (the parking key not counted).
    pub fn total(&self) -> usize {
        self.total
    }

    /// Keys leased now.
    pub fn leased(&self) -> usize {
        self.total - self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn take(&self) -> Option<Pkey> {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn give(&self, k: Pkey) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(k);
    }
}

/// A worker's leased keys: each key and the id of the owned domain holding it.
#[derive(Default)]
pub struct Lease {
    held: Vec<(Pkey, Option<u64>, u64)>,
    clock: u64,
}

impl Lease {
    /// Gives every leased key back, parking its holder first (`find` finds an owned domain
    /// by id).
    pub fn give_back<'a>(&mut self, pool: &KeyPool, find: impl Fn(u64) -> Option<&'a Domain>) -> std::io::Result<()> {
        for (k, holder, _) in self.held.drain(..) {
            if let Some(d) = holder.and_then(&find) {
                d.retag(pool.park())?;
            }
            pool.give(k);
        }
        Ok(())
    }

    /// Forgets the key of a domain about to be destroyed or handed on (its pages go with it
    /// or are parked by the caller), keeping the key leased.
    pub fn forget(&mut self, id: u64) {
        for h in &mut self.held {
            if h.1 == Some(id) {
                h.1 = None;
            }
        }
    }

    /// Makes each of `chain` (ids and domains, outermost first) hold a key: a key it holds, a
    /// free leased one, a new lease, or one taken from the least recently used holder outside
    /// the chain. Returns how many of the chain's first levels hold keys (the rest could get
    /// none: every key is leased elsewhere) and how many misses re-tagged a domain.
    pub fn cover<'a>(
        &mut self,
        pool: &KeyPool,
        chain: &[(u64, &'a Domain)],
        find: impl Fn(u64) -> Option<&'a Domain>,
    ) -> std::io::Result<(usize, u64)> {
        let mut misses = 0;
        for (n, &(id, d)) in chain.iter().enumerate() {
            self.clock += 1;
            if let Some(h) = self.held.iter_mut().find(|h| h.1 == Some(id)) {
                h.2 = self.clock;
                continue;
            }
            let slot = match self.held.iter().position(|h| h.1.is_none()) {
                Some(s) => Some(s),
                None => match pool.take() {
                    Some(k) => {
                        self.held.push((k, None, 0));
                        Some(self.held.len() - 1)
                    }
                    None => {
                        let in_chain = |v: u64| chain[..n].iter().any(|&(c, _)| c == v);
                        let victim = self
                            .held
                            .iter()
                            .enumerate()
                            .filter(|(_, h)| h.1.is_some_and(|v| !in_chain(v)))
                            .min_by_key(|(_, h)| h.2)
                            .map(|(s, _)| s);
                        if let Some(s) = victim
                            && let Some(v) = self.held[s].1.and_then(&find)
                        {
                            v.retag(pool.park())?;
                        }
                        victim
                    }
                },
            };
            let Some(s) = slot else { return Ok((n, misses)) };
            d.retag(self.held[s].0.id())?;
            misses += 1;
            self.held[s].1 = Some(id);
            self.held[s].2 = self.clock;
        }
        Ok((chain.len(), misses))
    }
}
