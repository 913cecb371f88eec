// A host of the MCP skills extension: SkillsClient from @modelcontextprotocol/client lists
// the server's skills, gets each by URI and reads every file verified against its entry.
// argv: python, library, mode ("legacy" or "2026-07-28"), hidden SKILL.md URI to get.
// Prints one JSON document; exits 1 on any failure.
import { Client } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [python, library, mode, hidden] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python, args: ["-m", "librarian", "--library", library, "mcp"],
  env: { ...process.env },
});
const negotiation = mode === "legacy" ? { mode: "legacy" } : { mode: { pin: mode } };
const client = new Client({ name: "node-host", version: "1" },
                          { versionNegotiation: negotiation });
await client.connect(transport);
const skills = new SkillsClient(client);
const report = { version: client.getNegotiatedProtocolVersion(), supported: skills.supported,
                 directoryRead: skills.directoryRead, skills: [] };
const listed = await skills.list();
for (const entry of listed.skills) {
  const { skill } = await skills.get(entry.uri);
  const files = [];
  for (const resource of skill.resources) {
    const file = await skills.read(skill, resource.uri);
    files.push({ uri: file.uri, verified: file.verified });
  }
  report.skills.push({ uri: skill.uri, frontmatter: skill.frontmatter, files });
}
if (hidden) {
  const { skill } = await skills.get(hidden);
  const file = await skills.read(skill);
  report.hidden = { uri: skill.uri, verified: file.verified };
}
const root = listed.skills[0]?.uri.replace(/\/SKILL\.md$/, "");
if (root) report.directory = (await skills.readDirectory(root)).resources.map((r) => r.uri);
console.log(JSON.stringify(report));
await client.close();
