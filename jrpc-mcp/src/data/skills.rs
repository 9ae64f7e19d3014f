//! Serves skills (SEP-2640, `io.modelcontextprotocol/skills`): directories of files, each with a
//! `SKILL.md` (YAML front matter, then markdown) that tells an agent how to do something, served
//! as resources under `skill://<skill-path>/`, in both eras.
//!
//! | request | answer |
//! | --- | --- |
//! | `skills/list` | a page of entries: each skill's `SKILL.md` URI, its front matter as JSON, and its files (`uri`, `digest`: `sha256:` and 64 hex digits of its bytes, `size`), `SKILL.md` first |
//! | `skills/get` of a skill's URI | `{"skill": entry}`; `-32602` for a URI no skill has |
//! | `resources/list` | each skill's `SKILL.md`, named and described by its front matter, `text/markdown` |
//! | `resources/read` of a skill's file | its contents |
//! | `resources/directory/read` of a skill's directory (`skill://<skill-path>`, or one inside) | a page of its children: files, and directories (`inode/directory`); `-32602` for a URI that is no directory |
//!
//! The front matter is written as YAML whose values are JSON (YAML takes JSON as it is), so that
//! the file's front matter and the entry's are the same object.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::lifecycle::MetaOnly;
use super::request::McpRequest;
use super::resources::Resource;
use super::result::{Listed, page};
use super::{Core, Params, decode, route};
use crate::protocol::base64;
use jrpc_runtime::wire::RpcError;
use jrpc_runtime::{ConfigError, Context, Methods, RegisterError};

/// Names the extension.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Names the MIME type of a directory's listing.
const DIRECTORY: &str = "inode/directory";
/// Caps the files a skill holds (its `SKILL.md` included), as SEP-2640 advises.
const MAX_FILES: usize = 512;
/// Caps the bytes a skill's files hold, as SEP-2640 advises.
const MAX_BYTES: usize = 16 * 1024 * 1024;

/// Describes a skill (SEP-2640): its `SKILL.md` (front matter: a `name` and a `description`, and
/// whatever else; then markdown) and the other files of its directory, served at
/// `skill://<skill-path>/`, the skill path ending with the name.
///
/// ```
/// use jrpc_mcp::{Mcp, Skill};
/// use serde_json::json;
///
/// let skill = Skill::new("pdf-processing", "Extract text and tables from PDF files.")
///     .frontmatter("license", json!("MIT"))
///     .body("# PDF processing\n\nRead `references/FORMS.md` for forms.\n")
///     .file("references/FORMS.md", "# Forms\n", "text/markdown");
/// let mcp = Mcp::builder("skills", "1.0.0").skill(skill).build()?;
/// # drop(mcp);
/// # Ok::<(), jrpc_runtime::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Skill {
    path: String,
    frontmatter: Map<String, Value>,
    body: String,
    files: Vec<(String, Vec<u8>, String)>,
}

impl Skill {
    /// Returns the skill `name` (1 to 64 of `a-z 0-9 -`, no hyphen first, last or twice), at
    /// `skill://name/`, described by `description`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        let name = name.into();
        let mut frontmatter = Map::new();
        frontmatter.insert("name".into(), name.clone().into());
        frontmatter.insert("description".into(), description.into().into());
        Self {
            path: name,
            frontmatter,
            body: String::new(),
            files: Vec::new(),
        }
    }

    /// Sets where the skill is served: `skill://<path>/`, whose last segment must be its name
    /// (`acme/pdf-processing` for the skill `pdf-processing`).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets a member of its front matter besides `name` and `description` (`license`,
    /// `metadata`, `allowed-tools`...).
    #[must_use]
    pub fn frontmatter(mut self, key: impl Into<String>, value: Value) -> Self {
        self.frontmatter.insert(key.into(), value);
        self
    }

    /// Sets the markdown of its `SKILL.md`, after the front matter.
    #[must_use]
    pub fn body(mut self, markdown: impl Into<String>) -> Self {
        self.body = markdown.into();
        self
    }

    /// Adds a file of its directory: at `path` (relative, `/` between directories), holding
    /// `contents`, of type `mime_type` (text as UTF-8, served as text when it is; bytes in
    /// base64 otherwise).
    #[must_use]
    pub fn file(
        mut self,
        path: impl Into<String>,
        contents: impl Into<Vec<u8>>,
        mime_type: impl Into<String>,
    ) -> Self {
        self.files
            .push((path.into(), contents.into(), mime_type.into()));
        self
    }

    /// Its `SKILL.md`: the front matter as YAML (each value JSON), then the body.
    fn manifest(&self) -> String {
        let mut text = String::from("---\n");
        // `name` and `description` first, as people write them; the rest in key order (a map
        // may keep its members in the order they came: sorted here, whatever its build).
        let first = ["name", "description"];
        let mut rest: Vec<(&str, &Value)> = self
            .frontmatter
            .iter()
            .filter(|(key, _)| !first.contains(&key.as_str()))
            .map(|(key, value)| (key.as_str(), value))
            .collect();
        rest.sort_by_key(|(key, _)| *key);
        let members = first
            .iter()
            .filter_map(|key| Some((*key, self.frontmatter.get(*key)?)))
            .chain(rest);
        for (key, value) in members {
            let plain = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let key = if plain {
                key.to_owned()
            } else {
                Value::from(key).to_string()
            };
            text.push_str(&format!("{key}: {value}\n"));
        }
        text.push_str("---\n");
        if !self.body.is_empty() {
            text.push('\n');
            text.push_str(&self.body);
        }
        text
    }
}

/// Returns whether `name` follows the Agent Skills naming rules.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Holds the skills served: their entries, and the directories their files make.
#[derive(Default)]
pub(crate) struct SkillSet {
    /// The entries, in the order the skills were given.
    entries: Vec<Box<RawValue>>,
    /// Each entry's index, by its `SKILL.md` URI.
    by_uri: HashMap<String, usize>,
    /// Each directory's children (files and directories), by its URI.
    directories: HashMap<String, Vec<Box<RawValue>>>,
}

impl SkillSet {
    /// Returns the skills of `skills`, and the resources that serve their files (each `SKILL.md`
    /// listed, the other files not).
    ///
    /// # Errors
    ///
    /// [`ConfigError`] (key `skill`) naming a skill whose name breaks the naming rules, whose
    /// path does not end with its name, whose description is empty, that is given twice, or
    /// whose files are past 512 or 16 MiB, or have a path that is not relative.
    pub(crate) fn new(
        skills: Vec<Skill>,
    ) -> Result<(Self, Vec<Resource>, Vec<Resource>), ConfigError> {
        let mut set = Self::default();
        let (mut listed, mut hidden) = (Vec::new(), Vec::new());
        let mut trees: BTreeMap<String, BTreeMap<String, Option<String>>> = BTreeMap::new();
        for skill in skills {
            let invalid = |why: String| ConfigError::new("skill", why);
            let name = skill
                .frontmatter
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if !valid_name(&name) {
                return Err(invalid(format!(
                    "`{name}` is not a skill name: 1 to 64 of a-z 0-9 -, no hyphen first, last or twice"
                )));
            }
            let path = skill.path.trim_matches('/').to_owned();
            if path.rsplit('/').next() != Some(name.as_str()) || path.split('/').any(str::is_empty)
            {
                return Err(invalid(format!(
                    "skill `{name}`: its path `{path}` must end with its name"
                )));
            }
            let description = skill.frontmatter.get("description").and_then(Value::as_str);
            if description.is_none_or(str::is_empty) {
                return Err(invalid(format!("skill `{name}` has no description")));
            }
            let root = format!("skill://{path}");
            let manifest_uri = format!("{root}/SKILL.md");
            if set.by_uri.contains_key(&manifest_uri) {
                return Err(invalid(format!("`{manifest_uri}` is given twice")));
            }
            let manifest = skill.manifest();
            let mut files = vec![(
                "SKILL.md".to_owned(),
                manifest.into_bytes(),
                "text/markdown".to_owned(),
            )];
            files.extend(skill.files.iter().cloned());
            if files.len() > MAX_FILES || files.iter().map(|f| f.1.len()).sum::<usize>() > MAX_BYTES
            {
                return Err(invalid(format!(
                    "skill `{name}` is past {MAX_FILES} files or {MAX_BYTES} bytes"
                )));
            }
            let mut manifest_entries = Vec::new();
            for (file, bytes, mime) in &files {
                let relative = file.trim_start_matches("./");
                if relative.is_empty()
                    || relative.starts_with('/')
                    || relative
                        .split('/')
                        .any(|part| part.is_empty() || part == "..")
                {
                    return Err(invalid(format!(
                        "skill `{name}`: `{file}` is not a relative path"
                    )));
                }
                let uri = format!("{root}/{relative}");
                let digest = format!("sha256:{}", crate::store::hex(&Sha256::digest(bytes)));
                manifest_entries.push(json!({ "uri": uri, "digest": digest, "size": bytes.len() }));
                // Each directory on the way knows its children.
                let mut dir = root.clone();
                let parts: Vec<&str> = relative.split('/').collect();
                for (n, part) in parts.iter().enumerate() {
                    let child = format!("{dir}/{part}");
                    let is_file = n + 1 == parts.len();
                    trees
                        .entry(dir.clone())
                        .or_default()
                        .insert(child.clone(), is_file.then(|| mime.clone()));
                    dir = child;
                }
                let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                if relative == "SKILL.md" {
                    // Listed, named and described as its front matter says.
                    let text = String::from_utf8_lossy(bytes);
                    let manifest = Resource::text(uri.clone(), name.clone(), text)
                        .mime(mime.clone())
                        .size(size);
                    listed.push(match description {
                        Some(description) => manifest.description(description),
                        None => manifest,
                    });
                    continue;
                }
                let leaf = parts.last().copied().unwrap_or_default().to_owned();
                let resource = match std::str::from_utf8(bytes) {
                    Ok(text) if mime.starts_with("text/") || mime.ends_with("json") => {
                        Resource::text(uri.clone(), leaf, text)
                    }
                    _ => Resource::blob(uri.clone(), leaf, base64::encode(bytes)),
                };
                hidden.push(resource.mime(mime.clone()).size(size));
            }
            let entry = json!({ "uri": manifest_uri, "frontmatter": skill.frontmatter,
                                "resources": manifest_entries });
            let entry =
                serde_json::value::to_raw_value(&entry).map_err(|err| invalid(err.to_string()))?;
            set.by_uri.insert(manifest_uri, set.entries.len());
            set.entries.push(entry);
        }
        for (dir, children) in trees {
            let listed_children = children
                .into_iter()
                .map(|(uri, mime)| {
                    let name = uri.rsplit('/').next().unwrap_or_default().to_owned();
                    let mime = mime.unwrap_or_else(|| DIRECTORY.to_owned());
                    serde_json::value::to_raw_value(
                        &json!({ "uri": uri, "name": name, "mimeType": mime }),
                    )
                    .map_err(|err| ConfigError::new("skill", err.to_string()))
                })
                .collect::<Result<_, _>>()?;
            set.directories.insert(dir, listed_children);
        }
        Ok((set, listed, hidden))
    }

    /// Returns whether there is no skill.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Registers `skills/list`, `skills/get` and `resources/directory/read`.
pub(crate) fn register(methods: &mut Methods, core: &Arc<Core>) -> Result<(), RegisterError> {
    route(methods, core, "skills/list", list)?;
    route(methods, core, "skills/get", get)?;
    route(methods, core, "resources/directory/read", directory)
}

async fn list(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let super::tools::ListParams { cursor, meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let page = page(&core.skills.entries, cursor.as_deref(), core.page_size)?;
    let listed = Listed {
        name: "skills",
        items: page.items.to_vec(),
        next: page.next,
    };
    Ok(req.stamp(listed, Some(core.hints.lists)))
}

/// Holds the params that name a skill or a directory.
#[derive(Deserialize)]
struct UriParams {
    uri: String,
    #[serde(default)]
    cursor: Option<String>,
}

/// `skills/get`'s result body.
#[derive(Serialize)]
struct Got {
    skill: Box<RawValue>,
}

async fn get(core: Arc<Core>, params: Params, ctx: Context) -> Result<impl Serialize, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let UriParams { uri, .. } = decode(&params)?;
    let skills = &core.skills;
    let entry = skills
        .by_uri
        .get(&uri)
        .and_then(|at| skills.entries.get(*at))
        .ok_or_else(|| {
            RpcError::invalid_params(format!("Unknown skill: {uri}"))
                .with_data(&json!({ "uri": uri }))
        })?;
    Ok(req.stamp(
        Got {
            skill: entry.clone(),
        },
        Some(core.hints.reads),
    ))
}

async fn directory(
    core: Arc<Core>,
    params: Params,
    ctx: Context,
) -> Result<impl Serialize, RpcError> {
    let MetaOnly { meta } = decode(&params)?;
    let req = McpRequest::read(meta, &ctx, &core)?;
    let UriParams { uri, cursor } = decode(&params)?;
    let children = core
        .skills
        .directories
        .get(uri.trim_end_matches('/'))
        .ok_or_else(|| {
            RpcError::invalid_params(format!("Not a directory: {uri}"))
                .with_data(&json!({ "uri": uri }))
        })?;
    let page = page(children, cursor.as_deref(), core.page_size)?;
    let listed = Listed {
        name: "resources",
        items: page.items.to_vec(),
        next: page.next,
    };
    Ok(req.stamp(listed, Some(core.hints.lists)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for good in ["pdf-processing", "a", "x1-2"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "PDF", "a_b", &"a".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_manifest_is_front_matter_then_markdown() {
        let skill = Skill::new("demo", "Shows: a \"quote\"")
            .frontmatter("metadata", json!({ "version": "1" }))
            .frontmatter("allowed tools", json!(["a"]))
            .body("# Demo\n");
        assert_eq!(
            skill.manifest(),
            "---\nname: \"demo\"\ndescription: \"Shows: a \\\"quote\\\"\"\n\"allowed tools\": [\"a\"]\nmetadata: {\"version\":\"1\"}\n---\n\n# Demo\n"
        );
    }

    #[test]
    fn a_skill_lists_its_files_and_directories() {
        let skill = Skill::new("demo", "A demo.")
            .path("acme/demo")
            .file("references/FORMS.md", "# Forms", "text/markdown")
            .file("logo.png", vec![0u8, 1, 2], "image/png");
        let (set, listed, hidden) = SkillSet::new(vec![skill]).unwrap();
        assert_eq!((listed.len(), hidden.len()), (1, 2));
        let entry: Value = serde_json::from_str(set.entries[0].get()).unwrap();
        assert_eq!(entry["uri"], "skill://acme/demo/SKILL.md");
        let files = entry["resources"].as_array().unwrap();
        assert_eq!(
            files[0]["uri"], "skill://acme/demo/SKILL.md",
            "SKILL.md first"
        );
        assert_eq!(files[2]["size"], 3);
        assert!(files[2]["digest"].as_str().unwrap().starts_with("sha256:"));
        let root: Vec<Value> = set.directories["skill://acme/demo"]
            .iter()
            .map(|raw| serde_json::from_str(raw.get()).unwrap())
            .collect();
        let mimes: Vec<&str> = root
            .iter()
            .map(|c| c["mimeType"].as_str().unwrap())
            .collect();
        assert_eq!(mimes, ["text/markdown", "image/png", "inode/directory"]);
        assert!(set.directories.contains_key("skill://acme/demo/references"));
        let key = |skill: Skill| SkillSet::new(vec![skill]).map(drop).unwrap_err().key();
        assert_eq!(key(Skill::new("Bad", "x")), "skill");
        assert_eq!(key(Skill::new("demo", "x").path("acme/other")), "skill");
        assert_eq!(key(Skill::new("demo", "")), "skill");
        assert_eq!(
            key(Skill::new("demo", "x").file("../up", "", "text/plain")),
            "skill"
        );
    }
}
