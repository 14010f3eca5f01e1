//! CPU identification straight from the `CPUID` instruction (x86 and x86_64
//! only, through `raw-cpuid`). On other architectures [`probe`] returns
//! `None` and the capture falls back to `/proc/cpuinfo`.

/// What `CPUID` says about the CPU; every field is optional so a partial or
/// absent answer is representable.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub struct CpuidInfo {
    /// Vendor string, e.g. `"AuthenticAMD"`.
    pub vendor: Option<String>,
    /// Brand string (leaves 0x80000002..4), trimmed.
    pub brand: Option<String>,
    /// Display family (base + extended).
    pub family: Option<u32>,
    /// Display model (base + extended).
    pub model: Option<u32>,
    /// Stepping.
    pub stepping: Option<u32>,
    /// Leaf 0x80000007 EDX bit 8.
    pub invariant_tsc: Option<bool>,
    /// Leaf 1 ECX bit 31.
    pub hypervisor_bit: Option<bool>,
    /// Hypervisor named by leaf 0x40000000; `"none"` if the hypervisor bit is
    /// clear.
    pub hypervisor_vendor: Option<String>,
    /// RDTSCP instruction (leaf 0x80000001 EDX bit 27).
    pub rdtscp: Option<bool>,
    /// RDPID instruction (leaf 7 ECX bit 22).
    pub rdpid: Option<bool>,
    /// Protection keys supported (leaf 7 ECX bit 3).
    pub pku: Option<bool>,
    /// Protection keys enabled by the OS (leaf 7 ECX bit 4).
    pub ospke: Option<bool>,
}

/// Queries `CPUID` on x86; `None` elsewhere.
#[cfg(any(target_arch = "x86_64", all(target_arch = "x86", target_feature = "sse")))]
pub fn probe() -> Option<CpuidInfo> {
    use raw_cpuid::{CpuId, Hypervisor};

    let cpuid = CpuId::new();
    let feat = cpuid.get_feature_info();
    let ext7 = cpuid.get_extended_feature_info();
    let hypervisor_bit = feat.as_ref().map(|f| f.has_hypervisor());
    let hypervisor_vendor = match hypervisor_bit {
        Some(false) => Some("none".to_string()),
        None => None,
        Some(true) => Some(match cpuid.get_hypervisor_info() {
            None => "unknown".to_string(),
            Some(h) => match h.identify() {
                Hypervisor::Xen => "Xen".to_string(),
                Hypervisor::VMware => "VMware".to_string(),
                Hypervisor::HyperV => "Hyper-V".to_string(),
                Hypervisor::KVM => "KVM".to_string(),
                Hypervisor::QEMU => "QEMU (TCG)".to_string(),
                Hypervisor::Bhyve => "bhyve".to_string(),
                Hypervisor::QNX => "QNX".to_string(),
                Hypervisor::ACRN => "ACRN".to_string(),
                Hypervisor::Unknown(b, c, d) => signature_text(b, c, d),
            },
        }),
    };
    let nonempty = |s: &str| {
        let t = s.trim();
        (!t.is_empty()).then(|| t.to_string())
    };
    Some(CpuidInfo {
        vendor: cpuid.get_vendor_info().and_then(|v| nonempty(v.as_str())),
        brand: cpuid.get_processor_brand_string().and_then(|b| nonempty(b.as_str())),
        family: feat.as_ref().map(|f| u32::from(f.family_id())),
        model: feat.as_ref().map(|f| u32::from(f.model_id())),
        stepping: feat.as_ref().map(|f| u32::from(f.stepping_id())),
        invariant_tsc: cpuid.get_advanced_power_mgmt_info().map(|a| a.has_invariant_tsc()),
        hypervisor_bit,
        hypervisor_vendor,
        rdtscp: cpuid.get_extended_processor_and_feature_identifiers().map(|e| e.has_rdtscp()),
        rdpid: ext7.as_ref().map(|e| e.has_rdpid()),
        pku: ext7.as_ref().map(|e| e.has_pku()),
        ospke: ext7.as_ref().map(|e| e.has_ospke()),
    })
}

/// Queries `CPUID` on x86; `None` elsewhere.
#[cfg(not(any(target_arch = "x86_64", all(target_arch = "x86", target_feature = "sse"))))]
pub fn probe() -> Option<CpuidInfo> {
    None
}

/// Renders an unrecognised 12-byte hypervisor signature (EBX, ECX, EDX of
/// leaf 0x40000000) as printable text, e.g. `"TCGTCGTCGTCG"`.
#[cfg_attr(not(any(target_arch = "x86", target_arch = "x86_64")), allow(dead_code))]
pub fn signature_text(ebx: u32, ecx: u32, edx: u32) -> String {
    let bytes: Vec<u8> = [ebx, ecx, edx].iter().flat_map(|r| r.to_le_bytes()).collect();
    let text: String = bytes
        .iter()
        .filter(|b| **b != 0)
        .map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b) } else { '?' })
        .collect();
    let text = text.trim();
    if text.is_empty() { "unknown".to_string() } else { text.to_string() }
}
