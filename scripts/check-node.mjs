// Fails fast, in plain JavaScript that any Node can parse, when the runtime is older than the
// project's Node 24 LTS (the npm package `node` normally puts Node 24 first on every npm script's PATH).
const REQUIRED_MAJOR = 24;

export function assertSupportedNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= REQUIRED_MAJOR) return;
  process.stderr.write(
    `This project needs Node.js ${REQUIRED_MAJOR} LTS or newer; this is Node ${process.versions.node}.\n` +
      `Run it through npm (npm start, npm test, npx platform …) after \`npm install\`: the pinned\n` +
      `devDependency "node" puts Node ${REQUIRED_MAJOR} first on the PATH of every npm script.\n`,
  );
  process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) assertSupportedNode();
