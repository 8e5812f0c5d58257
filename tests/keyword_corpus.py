"""Plain secrets under a secret's name (issue 20, finding 7): planted lines of many formats and key names,
and lines that only look like them. The values are built at run time (this file holds none, so neither
GitHub's push protection nor gitbot's own scan stops it). Used by tests/test_secretscan_keywords.py and
bench/bench_secret_recall.py, which compares gitbot's scanner with detect-secrets on the same set."""

from __future__ import annotations

import random
import string

WORDS = ("velvet", "harbor", "pepper", "lantern", "meadow", "copper", "saffron", "glacier", "orchid", "tundra")


def _value(style: str, seed: int) -> str:
    rng = random.Random(seed)
    word, other = rng.sample(WORDS, 2)
    digits = "".join(rng.choice(string.digits) for _ in range(4))
    return {
        "word-digits": f"plain{word}{digits}",               # plainvelvet1234
        "pin": f"{digits}-{rng.randint(1000, 9999)}-{word}",  # 4417-9921-velvet
        "phrase": f"{word}-{other}-{digits[:2]}",             # velvet-harbor-42
        "symbols": f"{word.capitalize()}{digits}!#",          # Velvet1234!#
        "digits": "".join(rng.choice(string.digits) for _ in range(8)),
        "mixed": f"{word[:3]}{digits}{other[:3].upper()}",    # vel1234HAR
        "backslash": f"{word[:3]}\\{word[3:]}{digits}",         # vel\vet1234 (a shell escape)
        "words": " ".join(rng.sample(WORDS, 4)),             # velvet harbor pepper lantern
    }[style]


# (kind, file name, line template, value style). The kind is the format the secret is written in.
PLANTED_TEMPLATES = [
    ("dotenv", ".env", "DB_PASS={}", "word-digits"),
    ("dotenv", ".env", "ADMIN_PIN={}", "pin"),
    ("dotenv", ".env", "SMTP_PASSWORD={}", "symbols"),
    ("dotenv", ".env", "REDIS_SECRET={}", "phrase"),
    ("dotenv", ".env.local", "SESSION_TOKEN={}", "mixed"),
    ("shell export", "deploy.sh", "export PGPASSWORD={}", "word-digits"),
    ("shell export", "deploy.sh", "export VAULT_TOKEN={}", "mixed"),
    ("shell export", "run.sh", "export ADMIN_PASSWORD='{}'", "symbols"),
    ("shell export", "run.sh", 'export BACKUP_PASSPHRASE="{}"', "phrase"),
    ("yaml", "config.yml", "password: {}", "word-digits"),
    ("yaml", "config.yml", "  db_password: {}", "symbols"),
    ("yaml", "values.yaml", '  adminPin: "{}"', "digits"),
    ("yaml", "values.yaml", "    secret: '{}'", "phrase"),
    ("yaml", "compose.yml", "      - MYSQL_ROOT_PASSWORD={}", "mixed"),
    ("json", "config.json", '  "password": "{}",', "word-digits"),
    ("json", "config.json", '{{"db": {{"user": "app", "pass": "{}"}}}}', "symbols"),
    ("json", "secrets.json", '  "api_token": "{}"', "phrase"),
    ("json", "secrets.json", '  "pin": "{}"', "digits"),
    ("python", "settings.py", 'DATABASE_PASSWORD = "{}"', "word-digits"),
    ("python", "settings.py", "EMAIL_HOST_PASSWORD = '{}'", "symbols"),
    ("python", "client.py", 'client = Client(user="svc", password="{}")', "phrase"),
    ("python", "client.py", 'conf = {{"secret": "{}"}}', "mixed"),
    ("javascript", "config.js", 'const dbPassword = "{}";', "word-digits"),
    ("javascript", "config.js", "  apiKey: '{}',", "mixed"),
    ("javascript", "server.ts", 'const adminSecret: string = "{}";', "phrase"),
    ("php", "config.php", "$db_password = '{}';", "symbols"),
    ("php", "config.php", "  'password' => '{}',", "word-digits"),
    ("ruby", "database.rb", '  password: "{}",', "phrase"),
    ("ruby", "secrets.rb", '  :api_key => "{}",', "mixed"),
    ("go", "main.go", 'dbPassword := "{}"', "word-digits"),
    ("go", "main.go", '\tSecret: "{}",', "symbols"),
    ("ini", "app.ini", "password = {}", "symbols"),
    ("ini", ".pypirc", "password: {}", "word-digits"),
    ("ini", "my.cnf", "passwd={}", "mixed"),
    ("properties", "app.properties", "spring.datasource.password={}", "word-digits"),
    ("properties", "app.properties", "mail.smtp.pass={}", "phrase"),
    ("toml", "config.toml", 'password = "{}"', "mixed"),
    ("toml", "config.toml", 'access_token = "{}"', "phrase"),
    ("connection string", "appsettings.json", '"Db": "Server=db;User Id=sa;Password={};"', "symbols"),
    ("connection string", "web.config", "Data Source=db;Initial Catalog=app;Pwd={};", "word-digits"),
    ("url query", "notes.md", "https://api.internal/v1/export?token={}&fmt=csv", "mixed"),
    ("docker", "Dockerfile", "ENV API_PASSWORD={}", "word-digits"),
    ("docker", "Dockerfile", "ARG NPM_TOKEN={}", "phrase"),
    # Red team finding 11: forms the keyword rule once missed.
    ("yaml", "secrets.yml", "password: |\n  {}", "phrase"),
    ("url", "db.py", 'url = f"postgresql://app:{}@{{host}}/db"', "symbols"),
    ("dotenv", ".env", "PASSWORD_DB={}", "word-digits"),
    ("dotenv", ".env", "DB_PASS={}", "backslash"),
    ("python", "settings.py", 'BACKUP_PASSPHRASE = "{}"', "words"),
]


def planted() -> list[tuple[str, str, str, str]]:
    """(kind, file name, line, value) for every planted secret."""
    out = []
    for i, (kind, name, template, style) in enumerate(PLANTED_TEMPLATES):
        value = _value(style, 1000 + i)
        out.append((kind, name, template.format(value), value))
    return out


# Lines that assign to a secret's name and hold no secret: code, types, templates, stand-ins.
NOT_SECRETS = [
    ("settings.py", 'password = os.environ["DB_PASSWORD"]'),
    ("settings.py", "password = None"),
    ("settings.py", "DB_PASSWORD = os.getenv('DB_PASSWORD', '')"),
    ("client.py", "token = get_token()"),
    ("client.py", "token = self.token"),
    ("client.py", "    password=password,"),
    ("client.py", "    connect(host, password=db_password)"),
    ("models.py", "    secret: str"),
    ("models.py", "    password: Optional[str] = None"),
    ("models.py", "    token: str = field(default_factory=make_token)"),
    (".env.example", "PASSWORD=changeme"),
    (".env.example", "DB_PASS=<password>"),
    (".env.example", "DB_PASS=${DB_PASS}"),
    (".env.example", "API_TOKEN=your-token-here"),
    ("README.md", "password: ***"),
    ("README.md", "export ANTHROPIC_API_KEY=sk-ant-..."),
    ("config.yml", "password: {{ vault_db_password }}"),
    ("config.yml", "  password: !vault |"),
    ("config.js", "const password = req.body.password;"),
    ("config.js", "  token: process.env.API_TOKEN,"),
    ("config.js", "if (password === undefined) {"),
    ("main.go", "password := os.Getenv(\"DB_PASSWORD\")"),
    ("tokens.py", "max_tokens = 4096"),
    ("tokens.py", "token_count = len(tokens)"),
    ("tokens.py", "tokenizer = Tokenizer.from_file(path)"),
    ("auth.py", "password_hash = bcrypt.hashpw(password, salt)"),
    ("auth.py", 'token_url = "https://auth.example.com/oauth/token"'),
    ("auth.py", 'token_type = "bearer"'),
    ("auth.py", "is_secret = True"),
    ("auth.py", 'PASSWORD_FIELD = "password"'),
    ("ui.py", "spinner = Spinner(style=dots)"),
    ("nav.py", "compass = heading_degrees"),
    ("php.php", "$password = $_POST['password'];"),
    ("ci.yml", "      password: ${{ secrets.REGISTRY_PASSWORD }}"),
    ("policy.toml", 'secret_name = "prod-db"'),
    ("hash.txt", "pin_hash = 8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92"),
    ("Makefile", "TOKEN ?= $(shell cat .token)"),
    ("test.py", "assert password == expected_password"),
    # Look-alikes of the forms red team finding 11 found missed: a name with a word after the keyword,
    ("compose.env", "PASSWORD_DB=$DB_PASS"),
    (".env.example", "PASSWORD_PROD=changeme"),
    ("settings.py", 'PASSWORD_HASH_ALGORITHM = "argon2id-v19"'),
    ("settings.py", 'token_prod_url = "https://auth.corp.internal/token"'),
    ("ci.sh", "PASS_CI=all-green-42"),
    ("settings.py", 'TOKEN_DB = "tokens.sqlite3"'),
    ("settings.py", 'PASSWORD_DB = "vault/passwords.kdbx"'),
    # a quoted value with spaces (a message, a template),
    ("ci.yml", '      password: "${{ secrets.DB_PASSWORD }}"'),
    ("forms.py", 'errors = {"password": "must be at least 8 characters"}'),
    ("forms.py", 'password = "Enter your password"'),
    ("api.py", 'token: "missing authorization header"'),
    (".env.example", 'DB_PASS = "your password here"'),
    # a YAML block scalar (prose, a template),
    ("action.yml", "description: |\n  Rotate the database password every ninety days\n"),
    ("values.yaml", "password: |\n  {{ .Values.db.password }}\n"),
    ("values.yaml", "password: |\n  changeme\n"),
    ("values.yaml", "password: >-\n  Ask the platform team for the admin password\n"),
    # a URL whose password is a placeholder,
    ("db.py", 'conn = f"postgresql://app:{password}@{host}/db"'),
    ("db.py", 'DSN = "mysql://root:%(password)s@%(host)s/app"'),
    ("db.js", "const url = `https://${user}:${token}@${host}/repo.git`;"),
    ("README.md", "Clone with `https://user:PASSWORD@host/repo.git`."),
    # and a backslash in a .env value that escapes a variable.
    (".env.example", "DB_PASS=\\$DB_PASS"),
]
