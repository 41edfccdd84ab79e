-- PLACEHOLDER on this branch only: migration 0007 belongs to the progressive-jackpot work (branch h-lapfloor,
-- 0007_progressive.sql); at merge its file replaces this one. Kept so that 0008 applies here (versions 1..N).
SELECT 1;
