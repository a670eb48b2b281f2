-- The pipeline state, as catalog st (the file is made when it is new).
ATTACH {{quote .}} AS st;
