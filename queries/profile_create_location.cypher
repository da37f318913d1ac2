// A new profile location of a user. $id $user_id $name $expression $vector
CREATE (:ProfileLocation {id: $id, user_id: $user_id, name: $name, expression: $expression,
        vector: $vector})
