//! Real SSH keys for the `ssh` job plugin: a fresh Ed25519 pair per job, from the operating
//! system's random source, in the formats OpenSSH reads.

use ssh_key::{Algorithm, LineEnding, PrivateKey};
use volcano_api::batch::Job;
use volcano_controllers::job_plugins::{PluginError, SshKeyPair, SshKeySource};

/// Generates an Ed25519 key pair for every job that brings none.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsSshKeys;

impl SshKeySource for OsSshKeys {
    fn key_pair(&self, job: &Job) -> Result<SshKeyPair, PluginError> {
        let fail = |what: &str, e: &dyn std::fmt::Display| PluginError {
            plugin: "ssh",
            message: format!("{what}: {e}"),
        };
        let mut key = PrivateKey::random(&mut rand_core_06::OsRng, Algorithm::Ed25519)
            .map_err(|e| fail("cannot generate an SSH key", &e))?;
        let comment = format!(
            "volcano-job-{}-{}",
            job.metadata.namespace.as_deref().unwrap_or("default"),
            job.metadata.name.as_deref().unwrap_or_default()
        );
        key.set_comment(&comment);
        let private_key_pem = key
            .to_openssh(LineEnding::LF)
            .map_err(|e| fail("cannot encode the SSH private key", &e))?
            .to_string();
        let public_key_openssh = key
            .public_key()
            .to_openssh()
            .map_err(|e| fail("cannot encode the SSH public key", &e))?;
        Ok(SshKeyPair {
            private_key_pem,
            public_key_openssh,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_gets_a_different_ed25519_pair_openssh_reads_back() {
        let job = Job::new("train", Default::default());
        let a = OsSshKeys.key_pair(&job).unwrap();
        let b = OsSshKeys.key_pair(&job).unwrap();
        assert_ne!(a.private_key_pem, b.private_key_pem);
        assert!(
            a.public_key_openssh.starts_with("ssh-ed25519 "),
            "{}",
            a.public_key_openssh
        );
        assert!(
            a.private_key_pem
                .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----")
        );
        let parsed = PrivateKey::from_openssh(&a.private_key_pem).unwrap();
        assert_eq!(
            parsed.public_key().to_openssh().unwrap(),
            a.public_key_openssh
        );
    }
}
