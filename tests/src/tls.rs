//! Certificates made for a test run (rcgen): a self-signed leaf and its PKCS#8 key in PEM files.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A self-signed certificate and its key, in PEM files of a folder of their own, removed on drop.
pub struct Certs {
    dir: PathBuf,
    /// The certificate's PEM file (the leaf, which is also the CA to trust).
    pub cert: PathBuf,
    /// The key's PEM file (PKCS#8, ECDSA P-256).
    pub key: PathBuf,
    /// The certificate, as PEM text.
    pub cert_pem: String,
}

impl Certs {
    /// A certificate for `names` (DNS names or IP addresses).
    ///
    /// # Panics
    ///
    /// When rcgen fails or the files cannot be written.
    pub fn for_names(names: &[&str]) -> Certs {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let certified = rcgen::generate_simple_self_signed(names).expect("rcgen");
        let dir = std::env::temp_dir().join(format!(
            "jrpc-tls-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let cert_pem = certified.cert.pem();
        std::fs::write(&cert, &cert_pem).expect("cert.pem");
        std::fs::write(&key, certified.signing_key.serialize_pem()).expect("key.pem");
        Certs {
            dir,
            cert,
            key,
            cert_pem,
        }
    }

    /// A certificate for `localhost` and `127.0.0.1`.
    pub fn localhost() -> Certs {
        Self::for_names(&["localhost", "127.0.0.1"])
    }

    /// The folder the files are in.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
