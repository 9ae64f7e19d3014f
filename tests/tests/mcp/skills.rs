//! The skills extension (SEP-2640), in process, in both eras: the capability, `skills/list` and
//! `skills/get` entries with each file's digest and size, the `SKILL.md` listed and read as a
//! resource whose front matter is the entry's, and directories read.

use jrpc_mcp::{Mcp, Skill};
use jrpc_tests::bounded;
use serde_json::{Value, json};

fn mcp() -> Mcp {
    let skill = Skill::new("pdf-processing", "Extract text from PDF files.")
        .path("acme/pdf-processing")
        .frontmatter("metadata", json!({ "version": "2" }))
        .body("# PDF\n\nSee `references/FORMS.md`.\n")
        .file("references/FORMS.md", "# Forms\n", "text/markdown");
    Mcp::builder("skills", "1").skill(skill).build().unwrap()
}

/// Calls `method` with `params` in process, in the modern era or not; the answer.
async fn call(mcp: &Mcp, method: &str, mut params: Value, modern: bool) -> Value {
    if modern {
        params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {} });
    }
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = bounded(mcp.methods().handle(&request.to_string()))
        .await
        .unwrap();
    serde_json::from_str(&answer).unwrap()
}

const MANIFEST: &str = "skill://acme/pdf-processing/SKILL.md";

#[tokio::test]
async fn a_skill_is_listed_got_and_read_in_both_eras() {
    let mcp = mcp();
    let init = call(
        &mcp,
        "initialize",
        json!({ "protocolVersion": "2025-11-25" }),
        false,
    )
    .await;
    assert_eq!(
        init["result"]["capabilities"]["extensions"],
        json!({ "io.modelcontextprotocol/skills": { "directoryRead": true } })
    );
    assert!(init["result"]["capabilities"]["resources"].is_object());
    for modern in [false, true] {
        let listed = call(&mcp, "skills/list", json!({}), modern).await["result"].clone();
        let entry = &listed["skills"][0];
        assert_eq!(entry["uri"], MANIFEST);
        assert_eq!(entry["frontmatter"]["name"], "pdf-processing");
        assert_eq!(entry["frontmatter"]["metadata"], json!({ "version": "2" }));
        let files = entry["resources"].as_array().unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0]["uri"], MANIFEST);
        assert_eq!(
            listed.get("ttlMs").is_some(),
            modern,
            "cache hints are modern"
        );
        let got = call(&mcp, "skills/get", json!({ "uri": MANIFEST }), modern).await;
        assert_eq!(&got["result"]["skill"], entry);
        let unknown = call(
            &mcp,
            "skills/get",
            json!({ "uri": "skill://x/SKILL.md" }),
            modern,
        )
        .await;
        assert_eq!(unknown["error"]["code"], -32602);

        let read = call(&mcp, "resources/read", json!({ "uri": MANIFEST }), modern).await;
        let contents = &read["result"]["contents"][0];
        assert_eq!(contents["mimeType"], "text/markdown");
        let text = contents["text"].as_str().unwrap();
        assert!(
            text.starts_with("---\nname: \"pdf-processing\"\n"),
            "{text}"
        );
        assert_eq!(files[0]["size"], text.len(), "the size of its bytes");
        let file = call(
            &mcp,
            "resources/read",
            json!({ "uri": "skill://acme/pdf-processing/references/FORMS.md" }),
            modern,
        )
        .await;
        assert_eq!(file["result"]["contents"][0]["text"], "# Forms\n");
        let resources = call(&mcp, "resources/list", json!({}), modern).await;
        let listed: Vec<&Value> = resources["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(listed.len(), 1, "the SKILL.md alone: {listed:?}");
        assert_eq!(listed[0]["name"], "pdf-processing");
        assert_eq!(listed[0]["description"], "Extract text from PDF files.");

        let root = call(
            &mcp,
            "resources/directory/read",
            json!({ "uri": "skill://acme/pdf-processing" }),
            modern,
        )
        .await;
        let children = root["result"]["resources"].as_array().unwrap();
        let kinds: Vec<(&str, &str)> = children
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["mimeType"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("SKILL.md", "text/markdown"),
                ("references", "inode/directory")
            ]
        );
        let not_one = call(
            &mcp,
            "resources/directory/read",
            json!({ "uri": MANIFEST }),
            modern,
        )
        .await;
        assert_eq!(not_one["error"]["code"], -32602);
    }
}
